//! Streams of chunks between two ranks, so that computing on one chunk overlaps with the
//! transfer of the next (the paper's send/receive "with a data stream", VI-B).
//!
//! A stream is a run of point-to-point messages with one tag: [`Endpoint::isend_stream`]
//! queues every chunk at once (the stack sends them as the windows allow), and
//! [`Endpoint::irecv_stream`] posts a receive per chunk; messages with one tag from one peer
//! match in order, so [`RecvStream::next_chunk`] hands out the chunks in order as each one
//! arrives, while the later ones are still on the way.

use crate::dtype::Element;
use crate::endpoint::{Endpoint, Request};
use crate::CollectiveError;
use std::collections::VecDeque;

/// The receiving end of a stream.
#[derive(Debug)]
pub struct RecvStream<T> {
    reqs: VecDeque<Request<T>>,
    received: usize,
}

impl<T: Element> RecvStream<T> {
    /// The next chunk if it has arrived (`Ok(None)` while it has not, or after the last).
    pub fn next_chunk(&mut self, ep: &mut Endpoint) -> Result<Option<Vec<T>>, CollectiveError> {
        let Some(front) = self.reqs.front() else { return Ok(None) };
        match ep.test(front)? {
            Some(v) => {
                self.reqs.pop_front();
                self.received += 1;
                Ok(Some(v))
            }
            None => Ok(None),
        }
    }

    /// Chunks not handed out yet.
    pub fn remaining(&self) -> usize {
        self.reqs.len()
    }

    /// Chunks handed out so far.
    pub fn received(&self) -> usize {
        self.received
    }

    /// True once every chunk was handed out.
    pub fn is_done(&self) -> bool {
        self.reqs.is_empty()
    }
}

/// Lengths of the chunks of a stream of `total` elements in chunks of `chunk`.
fn chunk_lens(total: usize, chunk: usize) -> impl Iterator<Item = usize> {
    let chunk = chunk.max(1);
    (0..total.div_ceil(chunk)).map(move |i| chunk.min(total - i * chunk))
}

impl Endpoint {
    /// Sends `data` to `peer` as a stream of chunks of `chunk` elements with `tag`; returns
    /// one request per chunk (each completes once its chunk is queued).
    pub fn isend_stream<T: Element>(
        &mut self,
        peer: usize,
        tag: u32,
        data: &[T],
        chunk: usize,
    ) -> Result<Vec<Request<T>>, CollectiveError> {
        if chunk == 0 {
            return Err(CollectiveError::BadArgument("a stream needs chunks of at least one element".into()));
        }
        data.chunks(chunk).map(|c| self.isend(peer, tag, c)).collect()
    }

    /// Receives a stream of `total` elements in chunks of `chunk` from `peer` with `tag`.
    pub fn irecv_stream<T: Element>(
        &mut self,
        peer: usize,
        tag: u32,
        total: usize,
        chunk: usize,
    ) -> Result<RecvStream<T>, CollectiveError> {
        if chunk == 0 {
            return Err(CollectiveError::BadArgument("a stream needs chunks of at least one element".into()));
        }
        let reqs = chunk_lens(total, chunk).map(|n| self.irecv(peer, tag, n)).collect::<Result<_, _>>()?;
        Ok(RecvStream { reqs, received: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::chunk_lens;

    #[test]
    fn chunks_cover_the_stream() {
        assert_eq!(chunk_lens(10, 4).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert_eq!(chunk_lens(8, 4).collect::<Vec<_>>(), vec![4, 4]);
        assert_eq!(chunk_lens(0, 4).count(), 0);
    }
}
