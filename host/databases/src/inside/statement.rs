//! What a dump restore does with each statement of a dump (issue 32):
//! the database's owner role owns everything restored and holds no other
//! role's privileges, so ownership and privilege statements are left out;
//! an extension must be in the database already (pre-seeded); nothing may
//! end the restore's one transaction.

/// The statement's words, upper-cased, comments and extra blanks left
/// out (only its first and last words decide anything).
fn words(sql: &str) -> Vec<String> {
    let mut text = String::new();
    let mut depth = 0u32;
    let mut rest = sql;
    while !rest.is_empty() {
        if depth == 0 && rest.starts_with("--") {
            rest = rest.find('\n').map_or("", |n| &rest[n..]);
        } else if rest.starts_with("/*") {
            depth += 1;
            rest = &rest[2..];
        } else if depth > 0 && rest.starts_with("*/") {
            depth -= 1;
            text.push(' ');
            rest = &rest[2..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            if depth == 0 {
                text.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
    }
    text.split_whitespace().map(str::to_uppercase).collect()
}

/// Whether `sql` is a `COPY ... FROM stdin`, whose rows follow it.
pub fn is_copy_from_stdin(sql: &str) -> bool {
    let w = words(sql);
    w.first().is_some_and(|f| f == "COPY")
        && w.len() >= 2
        && w[w.len() - 2] == "FROM"
        && w[w.len() - 1] == "STDIN"
}

/// What the restore does with a statement.
#[derive(Debug, PartialEq, Eq)]
pub enum Kind {
    /// Runs it.
    Run,
    /// Leaves it out: ownership and privileges (the owner role owns what
    /// is restored, and grants nothing to roles of another database), and
    /// comments on extensions (which the host's role owns).
    Skip,
    /// `CREATE EXTENSION name`: left out when the database has it (a
    /// pre-seeded extension), refused otherwise.
    Extension(String),
    /// Refused: it would end the restore's one transaction.
    Refuse(&'static str),
}

/// What the restore does with `sql`.
pub fn kind(sql: &str) -> Kind {
    let w = words(sql);
    let at = |i: usize| w.get(i).map(String::as_str).unwrap_or_default();
    match at(0) {
        "GRANT" | "REVOKE" => Kind::Skip,
        "ALTER" if at(1) == "DEFAULT" && at(2) == "PRIVILEGES" => Kind::Skip,
        "ALTER" if w.len() >= 3 && w[w.len() - 3] == "OWNER" && w[w.len() - 2] == "TO" => {
            Kind::Skip
        }
        "COMMENT" if at(1) == "ON" && at(2) == "EXTENSION" => Kind::Skip,
        "CREATE" if at(1) == "EXTENSION" => {
            let name = if at(2) == "IF" { at(5) } else { at(2) };
            Kind::Extension(name.trim_matches('"').to_lowercase())
        }
        "BEGIN" | "COMMIT" | "END" | "ROLLBACK" | "ABORT" | "SAVEPOINT" | "RELEASE" => {
            Kind::Refuse("transaction control is not allowed in a dump")
        }
        "START" | "PREPARE" if at(1) == "TRANSACTION" => {
            Kind::Refuse("transaction control is not allowed in a dump")
        }
        _ => Kind::Run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ownership_privileges_and_transactions_are_decided() {
        assert_eq!(kind("ALTER TABLE public.t OWNER TO postgres"), Kind::Skip);
        assert_eq!(kind("GRANT ALL ON TABLE t TO bob"), Kind::Skip);
        assert_eq!(kind("ALTER TABLE t ADD COLUMN owner text"), Kind::Run);
        assert_eq!(
            kind("CREATE EXTENSION IF NOT EXISTS \"uuid-ossp\" WITH SCHEMA public"),
            Kind::Extension("uuid-ossp".to_owned())
        );
        assert_eq!(
            kind("CREATE EXTENSION pgcrypto"),
            Kind::Extension("pgcrypto".to_owned())
        );
        assert!(matches!(kind("COMMIT"), Kind::Refuse(_)));
        assert!(matches!(kind("-- x\nSTART TRANSACTION"), Kind::Refuse(_)));
    }
}
