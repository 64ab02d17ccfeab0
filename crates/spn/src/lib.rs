//! Sum-Product Network inference (linerate's `accel::spn`): the model format, validation,
//! compilation into a flat batch program, evaluation, a benchmark-model generator and
//! SPFlow interoperability. No networking: the service lives in `apps::spn_service` (its
//! request and response records, with byte offsets, in `apps::spn_service::record`); Linux
//! clients are `linerate spn query` and the pure-Python `linerate/spn_client.py`.
//!
//! ```
//! use spn::{CompiledSpn, Evaluator, GeneratorConfig, Missing, Output};
//! let model = spn::generate(&GeneratorConfig::nips(10, 7)).unwrap();
//! let compiled = CompiledSpn::new(model).unwrap();
//! let mut ev = Evaluator::new(compiled);
//! let inputs = [0u8; 20]; // two vectors of 10 8-bit inputs
//! let mut ll = [0.0; 2];
//! ev.eval_u8(&inputs, Missing::None, &mut ll, Output::LogLikelihood).unwrap();
//! assert!(ll[0].is_finite() && ll[0] < 0.0);
//! ```

pub mod compile;
pub mod error;
pub mod eval;
pub mod generate;
pub mod json;
mod kernel;
pub mod leaf;
pub mod load;
pub mod model;
pub mod parallel;
pub mod rng;
pub mod spflow_text;
pub mod validate;

pub use compile::{CompileStats, CompiledSpn};
pub use error::SpnError;
pub use eval::{Evaluator, Missing, Output, U8Part};
pub use generate::{generate, GeneratorConfig, LeafKind, Shape};
pub use json::{from_json_str, to_json_string};
pub use leaf::Leaf;
pub use load::{load, save_json};
pub use model::{Node, Spn, SpnStats};
pub use parallel::eval_u8_parallel;
pub use spflow_text::{from_spflow_text, to_spflow_text};
