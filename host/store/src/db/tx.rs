//! Write transactions, and how they reach SQLite in few round trips.
//!
//! Every statement sent to SQLite is a round trip to the connection's worker
//! thread, and on SQLite's one writer each trip lengthens the turn every
//! other writer waits for. So on SQLite a [`Tx`]:
//! - sends `BEGIN IMMEDIATE` with its first statement rather than alone;
//! - holds [`Deferred`] writes (an event, whose result nobody reads) until
//!   its next statement or its commit, and sends them with it;
//! - skips `COMMIT` when nothing was sent at all.
//!
//! A statement and what precedes it travel as one multi-statement query
//! (SQLite runs them in order and stops at the first error); the caller
//! sees only its own statement's rows and result. On PostgreSQL a `Tx` is a
//! plain transaction on a pooled connection, and a deferred write runs at
//! once.

use futures::future::{self, BoxFuture};
use futures::stream::{self, BoxStream};
use futures::{StreamExt, TryStreamExt};
use sqlx::Describe;
use sqlx::any::{AnyArguments, AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo};
use sqlx::{Any, Arguments, Database, Either, Execute, Executor, TransactionManager};

use super::writer::WriteConn;
use crate::Result;
use crate::query::Bind;

type Manager = <Any as Database>::TransactionManager;

/// A write whose result nobody reads: sent with the transaction's next
/// statement or its commit, whichever comes first. One statement, without
/// `RETURNING`, written with `$1`-style placeholders.
pub struct Deferred {
    sql: &'static str,
    binds: Vec<Bind>,
}

impl Deferred {
    pub fn new(sql: &'static str) -> Deferred {
        Deferred {
            sql,
            binds: Vec::new(),
        }
    }

    pub fn bind(mut self, value: impl Into<Bind>) -> Deferred {
        self.binds.push(value.into());
        self
    }
}

/// A write transaction. Dropping it without [`Tx::commit`] rolls back.
/// `&mut Tx` is an executor: `query.execute(tx.conn())`.
pub struct Tx {
    /// `None` only once a rollback has taken it over.
    conn: Option<WriteConn>,
    sqlite: bool,
    /// `BEGIN` has been sent (on PostgreSQL, at once).
    begun: bool,
    /// Not yet committed.
    open: bool,
    deferred: Vec<Deferred>,
    /// The text of the current merged statement, which the query borrows.
    merged: String,
}

impl std::fmt::Debug for Tx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tx")
            .field("sqlite", &self.sqlite)
            .field("begun", &self.begun)
            .field("open", &self.open)
            .field("deferred", &self.deferred.len())
            .finish()
    }
}

/// What has to travel ahead of a statement: its text (ending in `; ` when
/// not empty), its values, and how many statements it holds.
struct Prefix {
    sql: String,
    binds: Vec<Bind>,
    statements: usize,
}

impl Tx {
    pub(super) async fn begin(mut conn: WriteConn) -> Result<Tx> {
        let sqlite = conn.is_sqlite();
        if !sqlite {
            Manager::begin(&mut conn, None).await?;
        }
        Ok(Tx {
            conn: Some(conn),
            sqlite,
            begun: !sqlite,
            open: true,
            deferred: Vec::new(),
            merged: String::new(),
        })
    }

    pub(crate) fn is_sqlite(&self) -> bool {
        self.sqlite
    }

    /// The transaction as an executor.
    pub fn conn(&mut self) -> &mut Tx {
        self
    }

    /// Queues `write` to go with the next statement or the commit; on
    /// PostgreSQL it runs at once.
    pub async fn defer(&mut self, write: Deferred) -> Result<()> {
        if self.sqlite {
            self.deferred.push(write);
            return Ok(());
        }
        let mut args = AnyArguments::default();
        for bind in &write.binds {
            bind.add_to(&mut args).map_err(sqlx::Error::Encode)?;
        }
        self.connection()
            .execute(sqlx::query_with(write.sql, args))
            .await?;
        Ok(())
    }

    pub async fn commit(mut self) -> Result<()> {
        if self.sqlite {
            // A transaction that sent nothing and holds nothing has nothing
            // to commit.
            if self.begun || !self.deferred.is_empty() {
                let prefix = self.take_prefix(0);
                let mut args = AnyArguments::default();
                for bind in &prefix.binds {
                    bind.add_to(&mut args).map_err(sqlx::Error::Encode)?;
                }
                let sql = prefix.sql + "COMMIT";
                self.connection()
                    .execute(sqlx::query_with(&sql, args))
                    .await?;
            }
        } else {
            Manager::commit(self.connection()).await?;
        }
        self.open = false;
        Ok(())
    }

    fn connection(&mut self) -> &mut sqlx::AnyConnection {
        self.conn
            .as_mut()
            .expect("a live transaction has its connection")
    }

    /// `BEGIN IMMEDIATE` if not sent yet and the deferred writes, with
    /// placeholders numbered from `offset + 1`; marks them sent.
    fn take_prefix(&mut self, offset: usize) -> Prefix {
        let mut prefix = Prefix {
            sql: String::new(),
            binds: Vec::new(),
            statements: 0,
        };
        if !self.begun {
            prefix.sql.push_str("BEGIN IMMEDIATE; ");
            prefix.statements += 1;
            self.begun = true;
        }
        for write in self.deferred.drain(..) {
            prefix
                .sql
                .push_str(&renumber(write.sql, offset + prefix.binds.len()));
            prefix.sql.push_str("; ");
            prefix.binds.extend(write.binds);
            prefix.statements += 1;
        }
        prefix
    }
}

/// `sql` with each `$n` placeholder outside quotes turned into
/// `$(n + by)`.
pub(super) fn renumber(sql: &str, by: usize) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '$' => {
                let mut digits = String::new();
                while let Some(d) = chars.peek().filter(|d| d.is_ascii_digit()) {
                    digits.push(*d);
                    chars.next();
                }
                match digits.parse::<usize>() {
                    Ok(n) => out.push_str(&(n + by).to_string()),
                    Err(_) => out.push_str(&digits),
                }
            }
            None => {}
        }
    }
    out
}

impl Drop for Tx {
    fn drop(&mut self) {
        if !self.open || !self.begun {
            return;
        }
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if !self.sqlite {
            // Flushed when the connection returns to the pool.
            Manager::start_rollback(&mut conn);
            return;
        }
        // The rollback keeps the writer's turn until it is done, so the
        // next writer finds no transaction open. Outside a runtime (the
        // process is ending) the connection goes with the open
        // transaction, which SQLite then rolls back.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = conn.execute("ROLLBACK").await {
                    tracing::warn!(error = %e, "rolling back a dropped transaction");
                }
            });
        }
    }
}

impl Tx {
    /// Takes what must travel ahead of `query` and, when there is any,
    /// writes the merged text to `self.merged` and returns the merged
    /// values and how many leading statements to hide from the caller.
    fn merge<'q, E: Execute<'q, Any>>(
        &mut self,
        query: &mut E,
    ) -> std::result::Result<Option<(AnyArguments<'q>, usize)>, sqlx::Error> {
        if !self.sqlite || (self.begun && self.deferred.is_empty()) {
            return Ok(None);
        }
        let mut args = query
            .take_arguments()
            .map_err(sqlx::Error::Encode)?
            .unwrap_or_default();
        let prefix = self.take_prefix(args.len());
        for bind in &prefix.binds {
            bind.add_to(&mut args).map_err(sqlx::Error::Encode)?;
        }
        self.merged = prefix.sql;
        self.merged.push_str(query.sql());
        Ok(Some((args, prefix.statements)))
    }
}

/// The rows and results of a merged query after its first `skip`
/// statements, which yield one result each. An error in those is the
/// transaction's, not the caller's statement's: it is reported as such, so
/// that it is never taken for the statement's own (a unique violation).
fn after_prefix<'e>(
    results: BoxStream<'e, std::result::Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>,
    skip: usize,
) -> BoxStream<'e, std::result::Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>> {
    let mut left = skip;
    results
        .filter_map(move |item| {
            let item = match item {
                _ if left == 0 => Some(item),
                Ok(Either::Left(_)) => {
                    left -= 1;
                    None
                }
                Ok(Either::Right(_)) => None,
                Err(e) => {
                    left = 0;
                    Some(Err(sqlx::Error::Protocol(format!(
                        "an earlier write of this transaction failed: {e}"
                    ))))
                }
            };
            future::ready(item)
        })
        .boxed()
}

impl<'c> Executor<'c> for &'c mut Tx {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        mut query: E,
    ) -> BoxStream<'e, std::result::Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        let persistent = query.persistent();
        match self.merge(&mut query) {
            Err(e) => stream::once(future::ready(Err(e))).boxed(),
            Ok(None) => self.connection().fetch_many(query),
            Ok(Some((args, skip))) => {
                let Tx { conn, merged, .. } = self;
                let conn: &'e mut sqlx::AnyConnection = conn
                    .as_mut()
                    .expect("a live transaction has its connection");
                let args: AnyArguments<'e> = args;
                let merged = sqlx::query_with(merged.as_str(), args).persistent(persistent);
                after_prefix(conn.fetch_many(merged), skip)
            }
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, std::result::Result<Option<AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        if !self.sqlite || (self.begun && self.deferred.is_empty()) {
            return self.connection().fetch_optional(query);
        }
        let rows = self.fetch_many(query);
        Box::pin(async move {
            let mut rows = rows;
            while let Some(step) = rows.try_next().await? {
                if let Either::Right(row) = step {
                    return Ok(Some(row));
                }
            }
            Ok(None)
        })
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, std::result::Result<AnyStatement<'q>, sqlx::Error>>
    where
        'c: 'e,
    {
        self.connection().prepare_with(sql, parameters)
    }

    fn describe<'e, 'q: 'e>(
        self,
        sql: &'q str,
    ) -> BoxFuture<'e, std::result::Result<Describe<Any>, sqlx::Error>>
    where
        'c: 'e,
    {
        self.connection().describe(sql)
    }
}
