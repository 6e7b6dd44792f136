//! The machine's own ceiling for a 2-thread load: two 1-thread loads of
//! the same mapped image in two processes at once, against one alone and
//! one 2-thread load, taken in turn `--repeat` times so that the three
//! see the same hour of a shared machine. Two processes share nothing but
//! the cores, the memory bus and the page cache, so what they reach is
//! what two threads of one process could; the share of it the 2-thread
//! load reaches is what the process loses to itself (page faults of two
//! threads in one address space, allocation, the merge).

use serde::Serialize;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Medians of the three configurations, and what they imply.
#[derive(Clone, Debug, Serialize)]
pub struct Ceiling {
    /// Inodes of the image.
    pub inodes: u64,
    /// Rounds taken (each: one alone, two at once, one 2-thread load).
    pub rounds: usize,
    /// A 1-thread load alone, its own `seconds`: the median.
    pub alone_seconds: f64,
    /// Two 1-thread loads at once: the slower one's `seconds`, median.
    pub pair_seconds: f64,
    /// A 2-thread load: its `seconds`, median.
    pub two_threads_seconds: f64,
    /// 2 x alone / pair: how much faster two loads at once get through
    /// two images than one load does through one (2.0 when the two cores
    /// are as good as one each).
    pub ceiling: f64,
    /// alone / 2-thread.
    pub speedup: f64,
    /// speedup / ceiling: the share of the machine's ceiling the 2-thread
    /// load reaches.
    pub of_ceiling: f64,
}

fn seconds(out: &[u8]) -> anyhow::Result<f64> {
    let v: Value = serde_json::from_slice(out)?;
    v["seconds"]
        .as_f64()
        .ok_or_else(|| anyhow::anyhow!("a load printed no seconds"))
}

/// The `seconds` of a finished load, or why it failed.
fn finished(exe: &Path, args: &[String], o: &Output) -> anyhow::Result<f64> {
    anyhow::ensure!(
        o.status.success(),
        "{} {}: {}",
        exe.display(),
        args.join(" "),
        String::from_utf8_lossy(&o.stderr)
    );
    seconds(&o.stdout)
}

fn run_load(exe: &Path, args: &[String]) -> anyhow::Result<f64> {
    let o = Command::new(exe)
        .args(args)
        .stderr(Stdio::piped())
        .output()?;
    finished(exe, args, &o)
}

/// Two loads at once: started together, each waited for; the slower
/// one's seconds.
fn run_pair(exe: &Path, args: &[String]) -> anyhow::Result<f64> {
    let spawn = || {
        Command::new(exe)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    };
    let mut a = spawn()?;
    let b = match spawn() {
        Ok(b) => b,
        Err(e) => {
            // Not left running on its own.
            let _ = a.kill();
            let _ = a.wait();
            return Err(e.into());
        }
    };
    let mut worst: f64 = 0.0;
    for child in [a, b] {
        let o = child.wait_with_output()?;
        worst = worst.max(finished(exe, args, &o)?);
    }
    Ok(worst)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Measures the ceiling on `image` (`rounds` rounds, at least one).
pub fn measure(exe: &Path, image: &Path, inodes: u64, rounds: usize) -> anyhow::Result<Ceiling> {
    let load = |threads: &str| -> Vec<String> {
        let mut v: Vec<String> = ["load", "--json", "--read", "mmap", "--threads", threads]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.insert(1, image.display().to_string());
        if threads == "1" {
            v.push("--serial".into());
        }
        v
    };
    let (one, two) = (load("1"), load("2"));
    let rounds = rounds.max(1);
    let (mut alone, mut pair, mut both) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        alone.push(run_load(exe, &one)?);
        pair.push(run_pair(exe, &one)?);
        both.push(run_load(exe, &two)?);
    }
    let (alone, pair, two) = (median(alone), median(pair), median(both));
    let ceiling = 2.0 * alone / pair;
    let speedup = alone / two;
    Ok(Ceiling {
        inodes,
        rounds,
        alone_seconds: alone,
        pair_seconds: pair,
        two_threads_seconds: two,
        ceiling,
        speedup,
        of_ceiling: speedup / ceiling,
    })
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn the_median_is_the_middle_run() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 3.0);
        assert_eq!(median(Vec::new()), 0.0);
    }
}
