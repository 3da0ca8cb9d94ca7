//! Writing one OTLP request: records into size-bounded chunks with their
//! trace pointers, metric points with their series, under a write budget
//! (a call may write at most 1,000 keys); what does not fit is rejected
//! and counted, as OTLP's partial success reports.

use std::collections::{BTreeMap, BTreeSet};

use plateau_sdk::{ApiError, Bucket};
use serde::Serialize;

use crate::record::{self, PointRec, SeriesRec};

/// The keys one request may write.
pub const MAX_WRITES: usize = 950;

/// Where a request's records go, and what it has written so far.
pub struct Writer {
    pub bucket: Bucket,
    pub project: String,
    pub day: String,
    pub now: u64,
    writes: usize,
    series: BTreeSet<String>,
}

impl Writer {
    /// Opens the organisation's bucket and marks the day.
    pub fn open(org: &str, project: &str, now: u64) -> Result<Writer, ApiError> {
        let bucket = Bucket::organization(org)?;
        let day = record::day(now);
        let mut writer = Writer {
            bucket,
            project: project.to_owned(),
            day,
            now,
            writes: 0,
            series: BTreeSet::new(),
        };
        let marker = record::day_key(project, &writer.day);
        if writer.bucket.get_raw(&marker)?.is_none() {
            writer.bucket.set(&marker, &0)?;
            writer.writes += 1;
        }
        Ok(writer)
    }

    fn room(&self, keys: usize) -> bool {
        self.writes + keys <= MAX_WRITES
    }

    /// Stores `items` in chunks under `kind`, each with a pointer per trace
    /// under `pointer_kind`; answers how many items did not fit.
    pub fn chunks<T: Serialize>(
        &mut self,
        kind: &str,
        pointer_kind: &str,
        items: Vec<(String, T)>,
    ) -> Result<usize, ApiError> {
        let mut chunks: Vec<(Vec<T>, BTreeSet<String>, usize)> = Vec::new();
        let mut planned = 0;
        let mut rejected = 0;
        for (trace, item) in items {
            let size = plateau_sdk::serde_json::to_vec(&item).map_or(0, |b| b.len()) + 1;
            let fits = chunks
                .last()
                .is_some_and(|(_, _, bytes)| bytes + size <= record::CHUNK_BYTES);
            let new_chunk = usize::from(!fits);
            let new_pointer = usize::from(
                !trace.is_empty()
                    && (!fits || !chunks.last().is_some_and(|c| c.1.contains(&trace))),
            );
            if !self.room(planned + new_chunk + new_pointer) {
                rejected += 1;
                continue;
            }
            if !fits {
                chunks.push((Vec::new(), BTreeSet::new(), 0));
            }
            planned += new_chunk + new_pointer;
            let chunk = chunks.last_mut().expect("a chunk was just made");
            chunk.0.push(item);
            chunk.2 += size;
            if !trace.is_empty() {
                chunk.1.insert(trace);
            }
        }
        for (n, (items, traces, _)) in chunks.into_iter().enumerate() {
            let name = record::chunk_name(self.now, n);
            let base = record::daily_prefix(kind, &self.project, &self.day);
            self.bucket.set(&format!("{base}{name}"), &items)?;
            let pointers = record::daily_prefix(pointer_kind, &self.project, &self.day);
            for trace in traces {
                self.bucket.set(&format!("{pointers}{trace}/{name}"), &0)?;
            }
        }
        self.writes += planned;
        Ok(rejected)
    }

    /// Stores one metric point and, once per request, its series; false if
    /// it did not fit.
    pub fn point(&mut self, series: &SeriesRec, point: &PointRec) -> Result<bool, ApiError> {
        let new_series = !self.series.contains(&series.id);
        if !self.room(1 + usize::from(new_series)) {
            return Ok(false);
        }
        if new_series {
            let key = format!(
                "{}{}",
                record::series_prefix(&self.project, Some(&series.name)),
                series.id
            );
            self.bucket.set(&key, series)?;
            self.series.insert(series.id.clone());
            self.writes += 1;
        }
        let key = format!(
            "{}{:020}",
            record::points_prefix(&self.project, &self.day, &series.name, &series.id),
            u64::MAX - point.time
        );
        self.bucket.set(&key, point)?;
        self.writes += 1;
        Ok(true)
    }
}

/// Counts of what a request stored and rejected, and why the first
/// rejection happened.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rejected: usize,
    pub reasons: BTreeMap<String, usize>,
}

impl Outcome {
    pub fn reject(&mut self, reason: impl Into<String>) {
        self.rejected += 1;
        *self.reasons.entry(reason.into()).or_default() += 1;
    }

    pub fn reject_many(&mut self, n: usize, reason: &str) {
        if n > 0 {
            self.rejected += n;
            *self.reasons.entry(reason.to_owned()).or_default() += n;
        }
    }

    /// The partial success's message: each reason with its count.
    pub fn message(&self) -> String {
        self.reasons
            .iter()
            .map(|(why, n)| format!("{n} rejected: {why}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Why records over the write budget were dropped.
pub const OVER_BUDGET: &str =
    "the request holds more traces or points than one request may store: send smaller batches";
