//! Engine tests: commands in, records out (Zeebe's EngineRule style).

mod harness;
mod samples;

pub use harness::*;
