//! Guest components built for wasm32-wasip2.
