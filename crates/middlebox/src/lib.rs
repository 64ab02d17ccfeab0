//! The middlebox runtime.
