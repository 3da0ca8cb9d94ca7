//! Plateau's plugin runtime.
