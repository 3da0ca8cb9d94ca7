//! Test support for black-box tests: start the real `plateau` binary on
//! embedded SQLite or on a throwaway PostgreSQL server, and talk HTTP to it
//! like a user would; a real SMTP server to relay mail to.

pub mod bounds;
mod client;
mod converge;
pub mod dns;
pub mod oci;
mod orphans;
pub mod pebble;
pub use orphans::kill_under;
mod postgres;
mod server;
mod smtp_session;
mod smtp_sink;

pub use client::{Client, Request, Response};
pub use postgres::{PgCluster, free_port};
pub use server::{Backend, Server, ServerOptions};
pub use smtp_sink::{ReceivedMail, SinkTls, SmtpSink, SmtpSinkOptions};

/// A valid API-token secret, for `PLATEAU_BOOTSTRAP_TOKEN`.
pub fn random_token() -> String {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut out = String::from("plt_");
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    while out.len() < 44 {
        let mut h = RandomState::new().build_hasher();
        h.write_usize(out.len());
        let n = h.finish();
        out.push(CHARS[(n % CHARS.len() as u64) as usize] as char);
    }
    out
}
