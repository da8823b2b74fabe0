//! Engine tests: commands in, records out (Zeebe's EngineRule style).

mod elements;
mod harness;
mod samples;

pub use harness::*;
