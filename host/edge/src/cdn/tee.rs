//! A response body that streams to the client as it comes from the app
//! and keeps a copy, up to a limit, for the cache: a miss costs the
//! client no wait, and the copy is handed over once the body has ended
//! whole (a body cut short or over the limit is not kept).

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http_body::{Body as HttpBody, Frame, SizeHint};
use plateau_runner::{Body, BoxError};

/// Called with the whole body once it has ended.
pub type Done = Box<dyn FnOnce(Bytes) + Send>;

pub struct Tee {
    inner: Body,
    copy: Option<BytesMut>,
    limit: usize,
    /// The body's length when its head said it (`Content-Length`).
    expected: Option<u64>,
    done: Option<Done>,
}

impl Tee {
    pub fn new(inner: Body, limit: u64, done: Done) -> Tee {
        let expected = inner.size_hint().exact();
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        let copy = match expected {
            Some(n) if n > limit as u64 => None,
            Some(n) => Some(BytesMut::with_capacity(n as usize)),
            None => Some(BytesMut::new()),
        };
        let mut tee = Tee {
            inner,
            copy,
            limit,
            expected,
            done: Some(done),
        };
        // An empty body is not polled at all.
        if expected == Some(0) {
            tee.finish();
        }
        tee
    }

    fn finish(&mut self) {
        if let (Some(copy), Some(done)) = (self.copy.take(), self.done.take()) {
            done(copy.freeze());
        }
    }
}

impl HttpBody for Tee {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    let over = this
                        .copy
                        .as_ref()
                        .is_some_and(|c| c.len() + data.len() > this.limit);
                    if over {
                        this.copy = None;
                    } else if let Some(copy) = &mut this.copy {
                        copy.extend_from_slice(data);
                        // A body of known length may not be polled past
                        // its last byte.
                        if this.expected == Some(copy.len() as u64) {
                            this.finish();
                        }
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.copy = None;
                Poll::Ready(Some(Err(e)))
            }
            Poll::Ready(None) => {
                if this
                    .expected
                    .is_none_or(|n| this.copy.as_ref().is_some_and(|c| c.len() as u64 == n))
                {
                    this.finish();
                }
                this.copy = None;
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
