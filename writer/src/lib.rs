//! nsimage writer.
