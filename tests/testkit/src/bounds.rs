//! What this machine allows a transfer, for the benches that put the
//! server's figures beside them in the same run: a userspace file copy, the
//! hashes a request must compute, and sendfile over loopback; with the
//! client-side file I/O both the bounds and the benches use.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

/// Moves everything `from` reads to `to`, 1 MiB at a time.
pub fn pump(mut from: impl Read, mut to: impl Write) {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = from.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n]).unwrap();
    }
}

/// Seconds to copy `from` to `to` with a userspace read/write loop (no
/// reflink, no copy_file_range).
pub fn copy(from: &Path, to: &Path) -> f64 {
    let start = Instant::now();
    pump(
        std::fs::File::open(from).unwrap(),
        std::fs::File::create(to).unwrap(),
    );
    start.elapsed().as_secs_f64()
}

/// Seconds to read the file 1 MiB at a time and feed every chunk to each
/// of `hashers` in turn, on one core: the bound on a request that must
/// compute those digests of its body.
pub fn hash_file(path: &Path, hashers: &mut [&mut dyn Write]) -> f64 {
    struct All<'a, 'b>(&'a mut [&'b mut dyn Write]);
    impl Write for All<'_, '_> {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            for h in self.0.iter_mut() {
                h.write_all(buf)?;
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let start = Instant::now();
    pump(std::fs::File::open(path).unwrap(), All(hashers));
    start.elapsed().as_secs_f64()
}

/// Seconds to send the file over loopback with sendfile(2)
/// (`std::io::copy` from a `File` to a `TcpStream`), with no HTTP and no
/// server, to a client that reads 1 MiB at a time and writes a file, as a
/// download's client does: the fastest a download can be on this machine.
pub fn loopback_bound(from: &Path, to: &Path) -> f64 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let from = from.to_owned();
    let sender = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut file = std::fs::File::open(from).unwrap();
        std::io::copy(&mut file, &mut stream).unwrap();
    });
    let start = Instant::now();
    pump(
        TcpStream::connect(addr).unwrap(),
        std::fs::File::create(to).unwrap(),
    );
    let secs = start.elapsed().as_secs_f64();
    sender.join().unwrap();
    secs
}

/// The shorter of two runs of `run`, each writing `out` from settled
/// pages; `out` is removed after each.
pub fn best_of_two(out: &Path, run: impl Fn(&Path) -> f64) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..2 {
        settle();
        best = best.min(run(out));
        std::fs::remove_file(out).unwrap();
    }
    best
}

/// Writes dirty pages back so that one phase does not pay for another.
pub fn settle() {
    let _ = Command::new("sync").status();
}

/// The peak resident memory (VmHWM) of process `pid`, in KiB; 0 when it
/// cannot be read.
pub fn vm_hwm_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Writes `mib` MiB of incompressible bytes (xorshift) to `path`, feeding
/// each 1 MiB chunk to `each` as well (to hash it, for instance).
pub fn write_test_file(path: &Path, mib: u64, mut each: impl FnMut(&[u8])) {
    let mut f = std::fs::File::create(path).unwrap();
    let mut state = 0x9e3779b97f4a7c15u64;
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..mib {
        for b in chunk.chunks_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            b.copy_from_slice(&state.to_le_bytes()[..b.len()]);
        }
        each(&chunk);
        f.write_all(&chunk).unwrap();
    }
}

/// A file written by its own thread from the chunks sent to it, with the
/// same file I/O as [`copy`], so that the client is not what is measured:
/// `tokio::fs` would copy every chunk once more and hop to the blocking
/// pool for each.
pub fn write_chunks<B: AsRef<[u8]> + Send + 'static>(
    path: &Path,
) -> (tokio::sync::mpsc::Sender<B>, std::thread::JoinHandle<()>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<B>(16);
    let mut file = std::fs::File::create(path).unwrap();
    let writer = std::thread::spawn(move || {
        while let Some(chunk) = rx.blocking_recv() {
            file.write_all(chunk.as_ref()).unwrap();
        }
    });
    (tx, writer)
}
