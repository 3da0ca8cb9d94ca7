//! A plain SQL dump read as the server will run it (issue 32, managed
//! dump restore): split into statements the way the server's lexer sees
//! them (quotes, quoted identifiers, dollar quotes, comments), with the
//! rows of each `COPY ... FROM stdin` block kept apart for the COPY
//! protocol. Nothing of psql runs: a line that would be a psql
//! meta-command (`\!` runs a shell, `\o` writes a file, `\connect`
//! leaves the database) is refused, save `\restrict`/`\unrestrict`, which
//! pg_dump writes to keep psql from running any. What the restore does
//! with each statement is [`super::statement`]'s.

use super::statement::is_copy_from_stdin;
use crate::{Error, Result};

/// One piece of a dump, with the line it starts on.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// A statement, without its closing `;`.
    Statement { line: usize, sql: String },
    /// The end of a `COPY ... FROM stdin` block's rows (they went out as
    /// [`Piece::Rows`]).
    CopyEnd { line: usize },
    /// Rows of the current COPY block, in COPY's text format.
    Rows(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Lex {
    Normal,
    Single { escapes: bool },
    Double,
    Dollar(String),
    Block(u32),
}

/// Reads a dump line by line ([`Splitter::line`]).
pub struct Splitter {
    statement: String,
    start: usize,
    line: usize,
    lex: Lex,
    /// Inside the rows of a COPY block.
    copying: bool,
}

impl Default for Splitter {
    fn default() -> Self {
        Splitter {
            statement: String::new(),
            start: 1,
            line: 0,
            lex: Lex::Normal,
            copying: false,
        }
    }
}

/// Rows sent to the server in one message, at most.
pub const ROWS_CHUNK: usize = 1 << 20;

impl Splitter {
    /// Takes the next line (with its `\n`), adding what it completes to
    /// `out`.
    pub fn line(&mut self, raw: &[u8], out: &mut Vec<Piece>) -> Result<()> {
        self.line += 1;
        if self.copying {
            if raw == b"\\.\n" || raw == b"\\." || raw == b"\\.\r\n" {
                self.copying = false;
                out.push(Piece::CopyEnd { line: self.line });
            } else {
                match out.last_mut() {
                    Some(Piece::Rows(rows)) if rows.len() < ROWS_CHUNK => rows.extend(raw),
                    _ => out.push(Piece::Rows(raw.to_vec())),
                }
            }
            return Ok(());
        }
        let text = std::str::from_utf8(raw)
            .map_err(|_| refused(self.line, "the dump is not UTF-8 text"))?;
        if self.lex == Lex::Normal && self.statement.trim().is_empty() {
            let head = text.trim_start();
            if let Some(command) = head.strip_prefix('\\') {
                let name = command.split_whitespace().next().unwrap_or_default();
                if name == "restrict" || name == "unrestrict" {
                    return Ok(());
                }
                return Err(refused(
                    self.line,
                    &format!(
                        "psql meta-command \\{name} is not allowed in a dump (no psql runs it); remove the line (pg_dump -C writes \\connect)"
                    ),
                ));
            }
        }
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let next = chars.get(i + 1).copied();
            if self.statement.trim().is_empty() && !c.is_whitespace() {
                self.start = self.line;
            }
            match &mut self.lex {
                Lex::Normal => match c {
                    '\'' => {
                        let before = i.checked_sub(1).map(|j| chars[j]);
                        let word = i.checked_sub(2).map(|j| chars[j]);
                        let escapes = matches!(before, Some('e' | 'E'))
                            && !word.is_some_and(|w| w.is_alphanumeric() || w == '_');
                        self.lex = Lex::Single { escapes };
                    }
                    '"' => self.lex = Lex::Double,
                    '-' if next == Some('-') => {
                        // A comment to the end of the line.
                        self.statement.push('\n');
                        break;
                    }
                    '/' if next == Some('*') => {
                        self.lex = Lex::Block(1);
                        self.statement.push_str("/*");
                        i += 2;
                        continue;
                    }
                    '$' => {
                        let word_before = i
                            .checked_sub(1)
                            .is_some_and(|j| chars[j].is_alphanumeric() || chars[j] == '_');
                        if !word_before && let Some(tag) = dollar_tag(&chars[i..]) {
                            self.statement.push_str(&tag);
                            i += tag.chars().count();
                            self.lex = Lex::Dollar(tag);
                            continue;
                        }
                    }
                    ';' => {
                        let sql = std::mem::take(&mut self.statement);
                        let line = self.start;
                        if is_copy_from_stdin(&sql) {
                            self.copying = true;
                        }
                        out.push(Piece::Statement {
                            line,
                            sql: sql.trim().to_owned(),
                        });
                        i += 1;
                        if self.copying {
                            // The rows start on the next line.
                            return Ok(());
                        }
                        continue;
                    }
                    _ => {}
                },
                Lex::Single { escapes } => {
                    if *escapes && c == '\\' {
                        self.statement.push(c);
                        if let Some(n) = next {
                            self.statement.push(n);
                        }
                        i += 2;
                        continue;
                    }
                    if c == '\'' {
                        self.lex = Lex::Normal;
                    }
                }
                Lex::Double => {
                    if c == '"' {
                        self.lex = Lex::Normal;
                    }
                }
                Lex::Dollar(tag) => {
                    if c == '$'
                        && chars[i..]
                            .iter()
                            .take(tag.chars().count())
                            .copied()
                            .eq(tag.chars())
                    {
                        let n = tag.chars().count();
                        self.statement.push_str(tag);
                        self.lex = Lex::Normal;
                        i += n;
                        continue;
                    }
                }
                Lex::Block(depth) => {
                    if c == '/' && next == Some('*') {
                        *depth += 1;
                        self.statement.push_str("/*");
                        i += 2;
                        continue;
                    }
                    if c == '*' && next == Some('/') {
                        *depth -= 1;
                        if *depth == 0 {
                            self.lex = Lex::Normal;
                        }
                        self.statement.push_str("*/");
                        i += 2;
                        continue;
                    }
                }
            }
            self.statement.push(c);
            i += 1;
        }
        Ok(())
    }

    /// The end of the dump: what is left must be nothing but blanks.
    pub fn finish(self) -> Result<()> {
        if self.copying {
            return Err(refused(
                self.line,
                "the dump ends inside the rows of a COPY",
            ));
        }
        if self.lex != Lex::Normal || !self.statement.trim().is_empty() {
            return Err(refused(
                self.start,
                "the dump ends inside a statement (cut off?)",
            ));
        }
        Ok(())
    }
}

/// `$tag$` (or `$$`) at the start of `chars`, if it is one.
fn dollar_tag(chars: &[char]) -> Option<String> {
    let mut tag = String::from("$");
    for (k, &c) in chars.iter().enumerate().skip(1) {
        if c == '$' {
            tag.push('$');
            return Some(tag);
        }
        let ok = c == '_' || c.is_alphabetic() || (k > 1 && c.is_ascii_digit());
        if !ok {
            return None;
        }
        tag.push(c);
    }
    None
}

fn refused(line: usize, why: &str) -> Error {
    Error::Refused {
        code: "dump_refused",
        detail: format!("line {line}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str) -> Result<Vec<Piece>> {
        let mut s = Splitter::default();
        let mut out = Vec::new();
        for line in text.split_inclusive('\n') {
            s.line(line.as_bytes(), &mut out)?;
        }
        s.finish()?;
        Ok(out)
    }

    fn sql(p: &Piece) -> &str {
        match p {
            Piece::Statement { sql, .. } => sql,
            _ => "",
        }
    }

    #[test]
    fn statements_split_where_the_server_would_split_them() {
        let dump = "SET a = 1; SET b = 'x;y';\n\
                    CREATE FUNCTION f() RETURNS int AS $body$ SELECT 1; $body$ LANGUAGE sql;\n\
                    -- a comment; with a semicolon\n\
                    CREATE TABLE \"we;ird\" (v text DEFAULT E'it\\'s;'); /* c; /* nested; */ */\n\
                    COPY public.t (n, v) FROM stdin;\n\
                    1\ta;b\n\
                    \\.\n\
                    SELECT 1;\n";
        let pieces = split(dump).unwrap();
        let statements: Vec<&str> = pieces.iter().map(sql).filter(|s| !s.is_empty()).collect();
        assert_eq!(statements.len(), 6, "{pieces:?}");
        assert_eq!(statements[1], "SET b = 'x;y'");
        assert!(
            statements[2].ends_with("$body$ LANGUAGE sql"),
            "{}",
            statements[2]
        );
        assert!(statements[3].contains("E'it\\'s;'"), "{}", statements[3]);
        assert!(pieces.contains(&Piece::Rows(b"1\ta;b\n".to_vec())));
        assert!(
            pieces
                .iter()
                .any(|p| matches!(p, Piece::CopyEnd { line: 7 }))
        );
        assert!(is_copy_from_stdin(statements[4]), "{}", statements[4]);
        assert_eq!(statements[5], "SELECT 1");
    }

    #[test]
    fn psql_meta_commands_are_refused_but_restrict() {
        assert!(split("\\restrict abc\nSELECT 1;\n\\unrestrict abc\n").is_ok());
        for bad in [
            "\\! rm -rf /\n",
            "\\connect other\n",
            "  \\o /tmp/x\n",
            "\\copy t from '/etc/passwd'\n",
        ] {
            let e = split(bad).unwrap_err().to_string();
            assert!(
                e.contains("meta-command") && e.starts_with("line 1"),
                "{bad}: {e}"
            );
        }
        // Inside a statement a backslash is the server's to refuse.
        assert!(split("SELECT 1 \\! ls\n;\n").is_ok());
    }

    #[test]
    fn a_cut_off_dump_is_refused() {
        assert!(split("SELECT 'abc\n").is_err());
        assert!(split("COPY t FROM stdin;\n1\n").is_err());
    }
}
