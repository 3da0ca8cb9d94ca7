//! Small helpers for building queries with `$n` placeholders that run on
//! both backends, and for keyset pages.

use sqlx::any::AnyArguments;
use sqlx::error::BoxDynError;
use sqlx::query::QueryAs;
use sqlx::{Any, Arguments, FromRow, any::AnyRow};

/// A value bound to a placeholder.
#[derive(Clone, Debug)]
pub enum Bind {
    Text(String),
    Int(i64),
    /// Text or NULL.
    MaybeText(Option<String>),
    Blob(Vec<u8>),
}

impl Bind {
    /// Appends the value to `args`.
    pub fn add_to(&self, args: &mut AnyArguments<'_>) -> Result<(), BoxDynError> {
        match self {
            Bind::Text(s) => args.add(s.clone()),
            Bind::Int(i) => args.add(*i),
            Bind::MaybeText(s) => args.add(s.clone()),
            Bind::Blob(b) => args.add(b.clone()),
        }
    }
}

impl From<String> for Bind {
    fn from(s: String) -> Bind {
        Bind::Text(s)
    }
}

impl From<&str> for Bind {
    fn from(s: &str) -> Bind {
        Bind::Text(s.to_owned())
    }
}

impl From<i64> for Bind {
    fn from(i: i64) -> Bind {
        Bind::Int(i)
    }
}

impl From<Vec<u8>> for Bind {
    fn from(b: Vec<u8>) -> Bind {
        Bind::Blob(b)
    }
}

impl From<Option<String>> for Bind {
    fn from(s: Option<String>) -> Bind {
        Bind::MaybeText(s)
    }
}

/// A WHERE clause assembled from optional filters.
#[derive(Default, Debug)]
pub struct Conditions {
    clauses: Vec<String>,
    binds: Vec<Bind>,
}

impl Conditions {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `clause`, where `?` stands for the placeholder of `bind`.
    pub fn push(&mut self, clause: &str, bind: Bind) -> &mut Self {
        let placeholder = self.bind(bind);
        self.clauses.push(clause.replace('?', &placeholder));
        self
    }

    /// Binds a value and returns its placeholder (`$3`), for clauses that
    /// use one value twice or several values.
    pub fn bind(&mut self, bind: Bind) -> String {
        self.binds.push(bind);
        format!("${}", self.binds.len())
    }

    /// Adds a clause without a value.
    pub fn push_raw(&mut self, clause: &str) -> &mut Self {
        self.clauses.push(clause.to_owned());
        self
    }

    pub fn where_sql(&self) -> String {
        if self.clauses.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", self.clauses.join(" AND "))
        }
    }

    pub fn binds(&self) -> &[Bind] {
        &self.binds
    }
}

/// Binds values in order to a `query_as`.
pub fn bind_all<'q, O>(
    mut query: QueryAs<'q, Any, O, AnyArguments<'q>>,
    binds: &[Bind],
) -> QueryAs<'q, Any, O, AnyArguments<'q>>
where
    O: for<'r> FromRow<'r, AnyRow>,
{
    for bind in binds {
        query = match bind {
            Bind::Text(s) => query.bind(s.clone()),
            Bind::Int(i) => query.bind(*i),
            Bind::MaybeText(s) => query.bind(s.clone()),
            Bind::Blob(b) => query.bind(b.clone()),
        };
    }
    query
}

/// One page of a keyset-ordered list: which side of the last seen key to
/// continue from, and how many rows to fetch.
#[derive(Clone, Debug, Default)]
pub struct Keyset {
    /// The sort key of the last item already returned.
    pub after: Option<String>,
    /// At most this many items; `None` returns every item.
    pub limit: Option<u32>,
}

/// Sort direction of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    Asc,
    /// Newest first.
    Desc,
}

impl Keyset {
    /// Adds the keyset condition on `column` to `conds` and returns the
    /// `ORDER BY ... LIMIT ...` tail. One row more than the page is
    /// fetched, so the caller knows whether another page exists.
    pub fn apply(&self, conds: &mut Conditions, column: &str, order: Order) -> String {
        if let Some(after) = &self.after {
            let op = match order {
                Order::Asc => ">",
                Order::Desc => "<",
            };
            conds.push(&format!("{column} {op} ?"), Bind::Text(after.clone()));
        }
        let dir = match order {
            Order::Asc => "ASC",
            Order::Desc => "DESC",
        };
        match self.limit {
            Some(limit) => format!(" ORDER BY {column} {dir} LIMIT {}", u64::from(limit) + 1),
            None => format!(" ORDER BY {column} {dir}"),
        }
    }
}

/// A list of rows and the total matching the filters.
#[derive(Debug)]
pub struct Listed<T> {
    /// Up to `limit + 1` rows: a row past the limit means another page exists.
    pub rows: Vec<T>,
    pub total: i64,
}

/// Runs a filtered, keyset-paged list: `SELECT {columns} FROM {from}`
/// with `conds`, ordered by `key`, plus the total under the same filters.
pub async fn list<T>(
    pool: &sqlx::AnyPool,
    columns: &str,
    from: &str,
    mut conds: Conditions,
    keyset: &Keyset,
    key: &str,
    order: Order,
) -> crate::Result<Listed<T>>
where
    T: for<'r> FromRow<'r, AnyRow> + Send + Unpin,
{
    let count_sql = format!("SELECT COUNT(*) FROM {from}{}", conds.where_sql());
    let (total,): (i64,) = bind_all(sqlx::query_as(&count_sql), conds.binds())
        .fetch_one(pool)
        .await?;
    let tail = keyset.apply(&mut conds, key, order);
    let sql = format!("SELECT {columns} FROM {from}{}{tail}", conds.where_sql());
    let rows = bind_all(sqlx::query_as(&sql), conds.binds())
        .fetch_all(pool)
        .await?;
    Ok(Listed { rows, total })
}
