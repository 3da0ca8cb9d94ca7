//! Work on a stream's chunks in tokio's blocking pool, overlapped with the
//! task that receives them: hashing an upload runs while the next chunks
//! arrive and are written, instead of between them (SHA-256 alone runs at
//! about half the speed of a page-cache copy, so doing it inline halves a
//! push).
//!
//! The state (a hasher, a file) travels into each blocking job and back,
//! so no thread is held while the client is slow, and chunks that arrive
//! while a job runs are batched into the next one. At most [`MAX_PENDING`]
//! bytes wait; past that, the receiver waits for the job (memory stays
//! flat whatever the blob's size).

use bytes::Bytes;
use tokio::task::JoinHandle;

/// Bytes that may wait for the running job before the receiver waits too.
const MAX_PENDING: usize = 4 * 1024 * 1024;

type Job<S> = JoinHandle<(S, std::io::Result<()>)>;

/// Feeds chunks, in order, to `work` on a state `S` in the blocking pool.
pub struct Pipe<S> {
    idle: Option<S>,
    running: Option<Job<S>>,
    pending: Vec<Bytes>,
    pending_len: usize,
    work: fn(&mut S, &[Bytes]) -> std::io::Result<()>,
}

impl<S: Send + 'static> Pipe<S> {
    pub fn new(state: S, work: fn(&mut S, &[Bytes]) -> std::io::Result<()>) -> Pipe<S> {
        Pipe {
            idle: Some(state),
            running: None,
            pending: Vec::new(),
            pending_len: 0,
            work,
        }
    }

    /// Queues `chunk`; starts a job when none runs, waits for the running
    /// one when too much is queued.
    pub async fn push(&mut self, chunk: Bytes) -> std::io::Result<()> {
        self.pending_len += chunk.len();
        self.pending.push(chunk);
        let busy = self.running.as_ref().is_some_and(|job| !job.is_finished());
        if busy && self.pending_len < MAX_PENDING {
            return Ok(());
        }
        self.join().await?;
        self.start();
        Ok(())
    }

    /// Runs what is queued and gives the state back.
    pub async fn finish(mut self) -> std::io::Result<S> {
        self.join().await?;
        self.start();
        self.join().await?;
        Ok(self.idle.take().expect("a joined pipe holds its state"))
    }

    /// Waits for the running job, if any, and takes its state back.
    async fn join(&mut self) -> std::io::Result<()> {
        if let Some(job) = self.running.take() {
            let (state, result) = job.await.map_err(std::io::Error::other)?;
            self.idle = Some(state);
            result?;
        }
        Ok(())
    }

    /// Hands the queued chunks to a new job (the pipe must be idle).
    fn start(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let Some(mut state) = self.idle.take() else {
            return;
        };
        let chunks = std::mem::take(&mut self.pending);
        self.pending_len = 0;
        let work = self.work;
        self.running = Some(tokio::task::spawn_blocking(move || {
            let result = work(&mut state, &chunks);
            (state, result)
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn chunks_arrive_in_order_and_the_state_comes_back() {
        let mut pipe = Pipe::new(Vec::new(), |out: &mut Vec<u8>, chunks| {
            chunks.iter().for_each(|c| out.extend_from_slice(c));
            Ok(())
        });
        let mut expected = Vec::new();
        for i in 0..1000u32 {
            let chunk = Bytes::from(i.to_le_bytes().repeat(1 + i as usize % 7));
            expected.extend_from_slice(&chunk);
            pipe.push(chunk).await.unwrap();
        }
        assert_eq!(pipe.finish().await.unwrap(), expected);
    }

    #[tokio::test]
    async fn a_failed_job_fails_the_pipe() {
        let mut pipe = Pipe::new((), |_, _| Err(std::io::Error::other("disk full")));
        let _ = pipe.push(Bytes::from_static(b"a")).await;
        let _ = pipe.push(Bytes::from_static(b"b")).await;
        assert!(pipe.finish().await.is_err());
    }
}
