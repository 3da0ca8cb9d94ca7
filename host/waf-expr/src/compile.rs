//! Type-checking an [`Ast`] into a [`Program`]: fields and functions
//! resolved, literals read as the type their operator needs, regular
//! expressions compiled, sets built; every error names where it is.

use std::collections::HashSet;
use std::net::IpAddr;

use ipnet::IpNet;
use regex::{Regex, RegexBuilder};

use crate::SyntaxError;
use crate::parse::{Ast, Literal, Rhs, Value};

/// The largest compiled regular expression, in bytes.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A compiled expression; [`Program::matches`] runs it on a request.
#[derive(Debug, Clone)]
pub struct Program {
    pub(crate) root: Node,
}

#[derive(Debug, Clone)]
pub(crate) enum Node {
    Any(Vec<Node>),
    All(Vec<Node>),
    Not(Box<Node>),
    Str(StrValue, StrTest),
    Int(IntValue, IntTest),
    Ip(IpTest),
}

#[derive(Debug, Clone)]
pub(crate) enum StrField {
    Method,
    Uri,
    Path,
    Query,
    Host,
    UserAgent,
    Referer,
    Cookie,
    Header(String),
    Arg(String),
    CookieNamed(String),
}

#[derive(Debug, Clone)]
pub(crate) enum StrValue {
    Field(StrField),
    Lower(Box<StrValue>),
    UrlDecode(Box<StrValue>),
}

#[derive(Debug, Clone)]
pub(crate) enum IntValue {
    Len(StrValue),
}

#[derive(Debug, Clone)]
pub(crate) enum StrTest {
    Eq(String),
    Contains(String),
    Matches(Regex),
    In(HashSet<String>),
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Cmp {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
pub(crate) enum IntTest {
    Cmp(Cmp, i64),
    In(Vec<i64>),
}

#[derive(Debug, Clone)]
pub(crate) enum IpTest {
    Eq(IpAddr),
    In(Vec<IpNet>),
}

/// What a value is.
enum Typed {
    Str(StrValue),
    Int(IntValue),
    Ip,
}

struct Compiler<'s> {
    source: &'s str,
}

pub(crate) fn compile(source: &str, ast: &Ast<'_>) -> Result<Program, SyntaxError> {
    let root = Compiler { source }.node(ast)?;
    Ok(Program { root })
}

impl Compiler<'_> {
    fn error(&self, at: &str, message: impl Into<String>) -> SyntaxError {
        SyntaxError::at(self.source, self.source.len() - at.len(), message)
    }

    fn node(&self, ast: &Ast<'_>) -> Result<Node, SyntaxError> {
        Ok(match ast {
            Ast::Or(all) => Node::Any(all.iter().map(|a| self.node(a)).collect::<Result<_, _>>()?),
            Ast::And(all) => Node::All(all.iter().map(|a| self.node(a)).collect::<Result<_, _>>()?),
            Ast::Not(inner) => Node::Not(Box::new(self.node(inner)?)),
            Ast::Test {
                value,
                op,
                op_at,
                rhs,
            } => self.test(value, op, op_at, rhs)?,
        })
    }

    fn test(
        &self,
        value: &Value<'_>,
        op: &str,
        op_at: &str,
        rhs: &Rhs<'_>,
    ) -> Result<Node, SyntaxError> {
        let op = match op {
            "==" => "eq",
            "!=" => "ne",
            "~" => "matches",
            "<" => "lt",
            "<=" => "le",
            ">" => "gt",
            ">=" => "ge",
            op => op,
        };
        let (negate, op) = match op {
            "ne" => (true, "eq"),
            op => (false, op),
        };
        let node = match (self.value(value)?, rhs) {
            (Typed::Str(v), Rhs::Set(items)) => {
                let set = items
                    .iter()
                    .map(|l| self.string(l))
                    .collect::<Result<_, _>>()?;
                Node::Str(v, StrTest::In(set))
            }
            (Typed::Str(v), Rhs::One(l)) => {
                let test = match op {
                    "eq" => StrTest::Eq(self.string(l)?),
                    "contains" => StrTest::Contains(self.string(l)?),
                    "matches" => StrTest::Matches(self.regex(l)?),
                    _ => return Err(self.error(
                        op_at,
                        format!(
                            "a string is compared with eq, ne, contains, matches or in, not {op}"
                        ),
                    )),
                };
                Node::Str(v, test)
            }
            (Typed::Int(v), Rhs::Set(items)) => {
                let set = items
                    .iter()
                    .map(|l| self.int(l))
                    .collect::<Result<_, _>>()?;
                Node::Int(v, IntTest::In(set))
            }
            (Typed::Int(v), Rhs::One(l)) => {
                let cmp =
                    match op {
                        "eq" => Cmp::Eq,
                        "lt" => Cmp::Lt,
                        "le" => Cmp::Le,
                        "gt" => Cmp::Gt,
                        "ge" => Cmp::Ge,
                        _ => return Err(self.error(
                            op_at,
                            format!(
                                "a number is compared with eq, ne, lt, le, gt, ge or in, not {op}"
                            ),
                        )),
                    };
                Node::Int(v, IntTest::Cmp(cmp, self.int(l)?))
            }
            (Typed::Ip, Rhs::Set(items)) => {
                let nets = items
                    .iter()
                    .map(|l| self.network(l))
                    .collect::<Result<_, _>>()?;
                Node::Ip(IpTest::In(nets))
            }
            (Typed::Ip, Rhs::One(l)) => {
                if op != "eq" {
                    return Err(self.error(
                        op_at,
                        format!("ip.src is compared with eq, ne or in, not {op}"),
                    ));
                }
                Node::Ip(IpTest::Eq(self.address(l)?))
            }
        };
        Ok(if negate {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }

    fn value(&self, value: &Value<'_>) -> Result<Typed, SyntaxError> {
        match value {
            Value::Field { name, key, at } => self.field(name, key.as_deref(), at),
            Value::Call { name, arg, at } => {
                let arg_at = match &**arg {
                    Value::Field { at, .. } | Value::Call { at, .. } => *at,
                };
                let Typed::Str(arg) = self.value(arg)? else {
                    return Err(self.error(arg_at, format!("{name} takes a string")));
                };
                match *name {
                    "lower" => Ok(Typed::Str(StrValue::Lower(Box::new(arg)))),
                    "url_decode" => Ok(Typed::Str(StrValue::UrlDecode(Box::new(arg)))),
                    "len" => Ok(Typed::Int(IntValue::Len(arg))),
                    _ => Err(self.error(
                        at,
                        format!("unknown function {name}: lower, url_decode and len exist"),
                    )),
                }
            }
        }
    }

    fn field(&self, name: &str, key: Option<&str>, at: &str) -> Result<Typed, SyntaxError> {
        // Header names are matched in lowercase, arguments and cookies as
        // written.
        let keyed = |make: fn(String) -> StrField, lower: bool| match key {
            Some(key) if lower => Ok(Typed::Str(StrValue::Field(make(key.to_ascii_lowercase())))),
            Some(key) => Ok(Typed::Str(StrValue::Field(make(key.to_owned())))),
            None => Err(self.error(at, format!("{name} needs a key: {name}[\"name\"]"))),
        };
        let plain = |field: StrField| match key {
            None => Ok(Typed::Str(StrValue::Field(field))),
            Some(_) => Err(self.error(at, format!("{name} takes no key"))),
        };
        match name {
            "http.request.method" => plain(StrField::Method),
            "http.request.uri" => plain(StrField::Uri),
            "http.request.uri.path" => plain(StrField::Path),
            "http.request.uri.query" => plain(StrField::Query),
            "http.host" => plain(StrField::Host),
            "http.user_agent" => plain(StrField::UserAgent),
            "http.referer" => plain(StrField::Referer),
            "http.cookie" => plain(StrField::Cookie),
            "http.request.headers" => keyed(StrField::Header, true),
            "http.request.uri.args" => keyed(StrField::Arg, false),
            "http.request.cookies" => keyed(StrField::CookieNamed, false),
            "ip.src" if key.is_none() => Ok(Typed::Ip),
            "ip.src" => Err(self.error(at, "ip.src takes no key")),
            _ => Err(self.error(at, format!("unknown field {name}"))),
        }
    }

    fn string(&self, literal: &Literal<'_>) -> Result<String, SyntaxError> {
        match literal {
            Literal::Str(s, _) => Ok(s.clone()),
            Literal::Bare(_, at) => Err(self.error(at, "expected a string in double quotes")),
        }
    }

    fn regex(&self, literal: &Literal<'_>) -> Result<Regex, SyntaxError> {
        let (pattern, at) = match literal {
            Literal::Str(pattern, at) => (pattern, at),
            Literal::Bare(_, at) => {
                return Err(self.error(at, "expected a regular expression in double quotes"));
            }
        };
        RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| {
                let reason = e.to_string();
                let reason = reason
                    .lines()
                    .last()
                    .unwrap_or("")
                    .trim()
                    .trim_start_matches("error: ");
                self.error(at, format!("invalid regular expression: {reason}"))
            })
    }

    fn int(&self, literal: &Literal<'_>) -> Result<i64, SyntaxError> {
        match literal {
            Literal::Bare(token, at) => token
                .parse()
                .map_err(|_| self.error(at, "expected a number")),
            Literal::Str(_, at) => Err(self.error(at, "expected a number, without quotes")),
        }
    }

    fn address(&self, literal: &Literal<'_>) -> Result<IpAddr, SyntaxError> {
        match literal {
            Literal::Bare(token, at) => token.parse().map_err(|_| {
                self.error(at, "expected an IP address; use `in {...}` for a network")
            }),
            Literal::Str(_, at) => Err(self.error(at, "expected an IP address, without quotes")),
        }
    }

    fn network(&self, literal: &Literal<'_>) -> Result<IpNet, SyntaxError> {
        match literal {
            Literal::Bare(token, at) => token
                .parse::<IpNet>()
                .or_else(|_| token.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    self.error(at, "expected an IP address or a network such as 10.0.0.0/8")
                }),
            Literal::Str(_, at) => {
                Err(self.error(at, "expected an IP address or a network, without quotes"))
            }
        }
    }
}
