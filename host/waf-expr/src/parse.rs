//! The parser: source text to an [`Ast`] that remembers where each part
//! starts, built from `nom` combinators. An error keeps the furthest
//! position any branch reached and what was expected there.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_while1};
use nom::character::complete::{char, multispace0, satisfy};
use nom::combinator::{cut, not, opt, peek, recognize};
use nom::error::{ContextError, ErrorKind, ParseError};
use nom::multi::many0;
use nom::sequence::{delimited, preceded, terminated};
use nom::{IResult, Parser};

use crate::{MAX_DEPTH, MAX_LEN, SyntaxError};

/// An expression as written; `at` is the rest of the source where a part
/// starts (its offset is the source's length minus `at`'s).
#[derive(Debug)]
pub(crate) enum Ast<'a> {
    Or(Vec<Ast<'a>>),
    And(Vec<Ast<'a>>),
    Not(Box<Ast<'a>>),
    Test {
        value: Value<'a>,
        op: &'a str,
        op_at: &'a str,
        rhs: Rhs<'a>,
    },
}

#[derive(Debug)]
pub(crate) enum Value<'a> {
    Field {
        name: &'a str,
        key: Option<String>,
        at: &'a str,
    },
    Call {
        name: &'a str,
        arg: Box<Value<'a>>,
        at: &'a str,
    },
}

#[derive(Debug)]
pub(crate) enum Rhs<'a> {
    One(Literal<'a>),
    Set(Vec<Literal<'a>>),
}

#[derive(Debug)]
pub(crate) enum Literal<'a> {
    /// A double-quoted string, unescaped.
    Str(String, &'a str),
    /// A bare token (a number, an address or a network), and where it
    /// starts.
    Bare(&'a str, &'a str),
}

/// A parse failure: where, and what was expected there.
#[derive(Debug)]
pub(crate) struct Failure<'a> {
    at: &'a str,
    expected: &'static str,
}

impl<'a> ParseError<&'a str> for Failure<'a> {
    fn from_error_kind(input: &'a str, _: ErrorKind) -> Self {
        Failure {
            at: input,
            expected: "",
        }
    }

    fn append(_: &'a str, _: ErrorKind, other: Self) -> Self {
        other
    }

    /// The branch that got further tells more.
    fn or(self, other: Self) -> Self {
        if other.at.len() < self.at.len()
            || (other.at.len() == self.at.len() && self.expected.is_empty())
        {
            other
        } else {
            self
        }
    }
}

impl<'a> ContextError<&'a str> for Failure<'a> {
    fn add_context(_: &'a str, ctx: &'static str, mut other: Self) -> Self {
        if other.expected.is_empty() {
            other.expected = ctx;
        }
        other
    }
}

type Res<'a, T> = IResult<&'a str, T, Failure<'a>>;

/// Names `what` a parser expects when it fails without saying.
fn expect<'a, T>(
    what: &'static str,
    mut p: impl Parser<&'a str, Output = T, Error = Failure<'a>>,
) -> impl Parser<&'a str, Output = T, Error = Failure<'a>> {
    move |i: &'a str| {
        p.parse(i)
            .map_err(|e| e.map(|f| Failure::add_context(i, what, f)))
    }
}

fn ws<'a, T>(
    p: impl Parser<&'a str, Output = T, Error = Failure<'a>>,
) -> impl Parser<&'a str, Output = T, Error = Failure<'a>> {
    preceded(multispace0, p)
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// A keyword, not followed by a word character (`in` is not `index`).
fn keyword<'a>(word: &'static str) -> impl Parser<&'a str, Output = &'a str, Error = Failure<'a>> {
    terminated(tag(word), not(peek(satisfy(is_word))))
}

/// Parses `source` whole.
pub(crate) fn parse(source: &str) -> Result<Ast<'_>, SyntaxError> {
    if source.len() > MAX_LEN {
        return Err(SyntaxError::at(
            source,
            MAX_LEN,
            format!("an expression is at most {MAX_LEN} bytes"),
        ));
    }
    check_depth(source)?;
    let failure = |f: Failure<'_>| {
        let offset = source.len() - f.at.len();
        let message = if f.at.trim().is_empty() && f.expected.is_empty() {
            "unexpected end of the expression".to_owned()
        } else if f.expected.is_empty() {
            "unexpected input".to_owned()
        } else {
            format!("expected {}", f.expected)
        };
        SyntaxError::at(source, offset, message)
    };
    match terminated(expr, multispace0).parse(source) {
        Ok(("", ast)) => Ok(ast),
        Ok((rest, _)) => Err(SyntaxError::at(
            source,
            source.len() - rest.len(),
            "expected `and`, `or`, `)` or the end of the expression",
        )),
        Err(nom::Err::Error(f) | nom::Err::Failure(f)) => Err(failure(f)),
        Err(nom::Err::Incomplete(_)) => Err(SyntaxError::at(
            source,
            source.len(),
            "unexpected end of the expression",
        )),
    }
}

/// Refuses nesting deeper than [`MAX_DEPTH`] before the recursive parser
/// sees it (parentheses, and `not`s in a row, outside strings).
fn check_depth(source: &str) -> Result<(), SyntaxError> {
    let (mut depth, mut nots, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for (at, c) in source.char_indices() {
        if in_string {
            match (escaped, c) {
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => escaped = false,
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            '!' if !source[at..].starts_with("!=") => nots += 1,
            'n' if source[at..].starts_with("not")
                && !source[..at].ends_with(is_word)
                && !source[at + 3..].starts_with(is_word) =>
            {
                nots += 1
            }
            _ => {}
        }
        if depth > MAX_DEPTH || nots > MAX_DEPTH {
            return Err(SyntaxError::at(
                source,
                at,
                format!("nested deeper than {MAX_DEPTH} levels"),
            ));
        }
    }
    Ok(())
}

fn expr(i: &str) -> Res<'_, Ast<'_>> {
    let (i, first) = and_expr(i)?;
    let (i, rest) = many0(preceded(ws(alt((keyword("or"), tag("||")))), cut(and_expr))).parse(i)?;
    Ok((i, join(first, rest, Ast::Or)))
}

fn and_expr(i: &str) -> Res<'_, Ast<'_>> {
    let (i, first) = not_expr(i)?;
    let (i, rest) = many0(preceded(
        ws(alt((keyword("and"), tag("&&")))),
        cut(not_expr),
    ))
    .parse(i)?;
    Ok((i, join(first, rest, Ast::And)))
}

fn join<'a>(first: Ast<'a>, mut rest: Vec<Ast<'a>>, all: fn(Vec<Ast<'a>>) -> Ast<'a>) -> Ast<'a> {
    if rest.is_empty() {
        return first;
    }
    rest.insert(0, first);
    all(rest)
}

fn not_expr(i: &str) -> Res<'_, Ast<'_>> {
    let negation = preceded(
        ws(alt((keyword("not"), terminated(tag("!"), not(char('=')))))),
        cut(not_expr),
    );
    let group = delimited(ws(char('(')), cut(expr), cut(expect("`)`", ws(char(')')))));
    expect(
        "a test such as `http.host eq \"example.com\"`, `not` or `(`",
        alt((negation.map(|e| Ast::Not(Box::new(e))), group, test)),
    )
    .parse(i)
}

fn test(i: &str) -> Res<'_, Ast<'_>> {
    let (i, value) = value(i)?;
    let (i, _) = multispace0(i)?;
    let op_at = i;
    let (i, op) = cut(expect(
        "an operator: eq, ne, contains, matches, in, lt, le, gt or ge",
        alt((
            keyword("eq"),
            keyword("ne"),
            keyword("contains"),
            keyword("matches"),
            keyword("in"),
            keyword("lt"),
            keyword("le"),
            keyword("gt"),
            keyword("ge"),
            tag("=="),
            tag("!="),
            tag("~"),
            tag("<="),
            tag(">="),
            tag("<"),
            tag(">"),
        )),
    ))
    .parse(i)?;
    let (i, rhs) = if op == "in" {
        let set = delimited(
            ws(char('{')),
            many0(terminated(ws(literal), opt(ws(char(','))))),
            expect("a literal or `}`", ws(char('}'))),
        );
        cut(expect("`{` and a set of literals", set))
            .map(Rhs::Set)
            .parse(i)?
    } else {
        cut(ws(literal)).map(Rhs::One).parse(i)?
    };
    let test = Ast::Test {
        value,
        op,
        op_at,
        rhs,
    };
    Ok((i, test))
}

fn value(i: &str) -> Res<'_, Value<'_>> {
    let (i, _) = multispace0(i)?;
    let at = i;
    let (i, name) = expect(
        "a field or a function",
        recognize(take_while1(|c: char| is_word(c) || c == '.')),
    )
    .parse(i)?;
    if let Ok((i, _)) = ws(char::<&str, Failure<'_>>('(')).parse(i) {
        let (i, arg) = cut(value).parse(i)?;
        let (i, _) = cut(expect("`)`", ws(char(')')))).parse(i)?;
        let call = Value::Call {
            name,
            arg: Box::new(arg),
            at,
        };
        return Ok((i, call));
    }
    let (i, key) = opt(delimited(
        ws(char('[')),
        cut(expect("a string in double quotes", ws(string))),
        cut(expect("`]`", ws(char(']')))),
    ))
    .parse(i)?;
    Ok((i, Value::Field { name, key, at }))
}

fn literal(i: &str) -> Res<'_, Literal<'_>> {
    let mut bare = take_while1(|c: char| c.is_ascii_alphanumeric() || ".:/-_".contains(c));
    expect(
        "a string in double quotes, a number or an IP address",
        alt((
            |i| {
                let at = i;
                string(i).map(|(rest, s)| (rest, Literal::Str(s, at)))
            },
            |i| {
                bare.parse(i)
                    .map(|(rest, token)| (rest, Literal::Bare(token, i)))
            },
        )),
    )
    .parse(i)
}

/// A double-quoted string: `\"` and `\\` are escapes, any other backslash
/// is kept.
fn string(i: &str) -> Res<'_, String> {
    let (body, _) = char('"').parse(i)?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' => return Ok((&body[at + 1..], out)),
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => out.push(e),
                Some((_, other)) => {
                    out.push('\\');
                    out.push(other);
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err(nom::Err::Failure(Failure {
        at: i,
        expected: "a closing `\"` for this string",
    }))
}
