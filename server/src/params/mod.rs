//! WebHDFS's operations and their parameters: [`table`], the one table of
//! operations (each op's method, parameters, permission check and
//! handler), from which the parameter checks, both servers' dispatch, the
//! read-only server's refusals and the permission checks derive; and
//! [`values`], the parameters' values parsed with HDFS's rules, with
//! HDFS's reserved paths.

pub mod table;
pub mod values;

pub use table::{check, find, method_of, ops, Handler, Method, OpSpec, OPS};
