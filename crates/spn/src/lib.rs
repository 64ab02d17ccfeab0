//! Sum-Product Network inference.
