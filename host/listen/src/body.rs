//! A request body that gives up when the client stops sending: each read
//! that waits longer than the idle time ends the body with a
//! [`BodyError`] whose [`BodyError::is_timeout`] holds. It is a per-read
//! bound, not a deadline: a large upload that keeps sending is never cut.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use hyper::body::Incoming;
use tokio::time::Sleep;

/// The body every listener hands its service.
pub struct Body {
    inner: Incoming,
    idle: Option<Duration>,
    /// Armed while a read waits; dropped when bytes arrive.
    timer: Option<Pin<Box<Sleep>>>,
}

impl Body {
    /// `idle`: how long one read may wait for the client; `None` waits
    /// forever.
    pub fn new(inner: Incoming, idle: Option<Duration>) -> Body {
        Body {
            inner,
            idle,
            timer: None,
        }
    }
}

/// Why a request body ended early.
#[derive(Debug)]
pub struct BodyError(Kind);

#[derive(Debug)]
enum Kind {
    Timeout(Duration),
    Hyper(hyper::Error),
}

impl BodyError {
    /// The client sent nothing for longer than the idle time.
    pub fn is_timeout(&self) -> bool {
        matches!(self.0, Kind::Timeout(_))
    }

    /// Whether `error` (as a service sees a body's error, boxed) is a
    /// [`BodyError`] of a stalled client.
    pub fn is_timeout_error(error: &(dyn std::error::Error + 'static)) -> bool {
        let mut current = Some(error);
        while let Some(e) = current {
            if e.downcast_ref::<BodyError>()
                .is_some_and(BodyError::is_timeout)
            {
                return true;
            }
            current = e.source();
        }
        false
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Timeout(idle) => write!(
                f,
                "the client sent no part of the request body for {} ms",
                idle.as_millis()
            ),
            Kind::Hyper(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for BodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0 {
            Kind::Timeout(_) => None,
            Kind::Hyper(e) => Some(e),
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.timer = None;
                Poll::Ready(frame.map(|f| f.map_err(|e| BodyError(Kind::Hyper(e)))))
            }
            Poll::Pending => {
                let Some(idle) = this.idle else {
                    return Poll::Pending;
                };
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                if timer.as_mut().poll(cx).is_ready() {
                    this.timer = None;
                    return Poll::Ready(Some(Err(BodyError(Kind::Timeout(idle)))));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
