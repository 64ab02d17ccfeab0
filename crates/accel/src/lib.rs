//! Accelerator kernels: they take bytes or addresses and return results; no networking.
