//! The router: method and path pattern to handler, and the route list of the
//! plugin's self-description, from one table so the two never drift.
//!
//! Patterns and matching are the host's own ([`plateau_contract::route`]):
//! segments are literals, `{name}` (one non-empty segment) or, as the last
//! segment, `{name...}` (one or more segments), and the most specific
//! pattern wins. A path no pattern matches is a 404 problem; a path matched
//! only by routes of other methods is a 405 problem with an `Allow` header.

use std::collections::BTreeMap;
use std::ops::Index;

use plateau_contract::api_schema::{ApiSchema, ResponseSchema, RouteSchema};
use plateau_contract::route::{self, Capture, Found, Pattern};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::{Access, ApiError, Method, Request, Response, RouteInfo, percent_decode};

/// A route handler.
pub type Handler = fn(&Request, &Params) -> Result<Response, ApiError>;

/// The values of a matched pattern's parameters, percent-decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

impl Params {
    /// The percent-decoded values of a match; a rest parameter's segments
    /// are decoded one by one and joined with `/`.
    fn decode(captures: &[Capture<'_, '_>]) -> Params {
        let pairs = captures
            .iter()
            .map(|c| {
                let value = match c.segments {
                    [one] => percent_decode(one),
                    many => {
                        let decoded: Vec<String> = many.iter().map(|s| percent_decode(s)).collect();
                        decoded.join("/")
                    }
                };
                (c.name.to_owned(), value)
            })
            .collect();
        Params { pairs }
    }
}

impl Index<&str> for Params {
    type Output = str;

    /// Panics if the pattern has no parameter `name`: a bug in the route
    /// table, not a client error.
    fn index(&self, name: &str) -> &str {
        self.get(name)
            .unwrap_or_else(|| panic!("the matched route has no parameter {name}"))
    }
}

#[derive(Debug, Clone)]
struct Entry {
    method: Method,
    /// As written; parsed when matched (see [`Router::route`]).
    pattern: String,
    access: Access,
    summary: String,
    /// The longer text of the OpenAPI document ([`Router::description`]).
    description: String,
    handler: Handler,
    /// The request body's schema ([`Router::request`]).
    request: Option<SchemaFn>,
    /// Its media type when not JSON ([`Router::request_bytes`]).
    request_type: Option<String>,
    /// The body may be left out ([`Router::optional_request`]).
    request_optional: bool,
    /// The body's fields this route needs although its type makes them
    /// optional ([`Router::requires`]).
    required: Vec<&'static str>,
    /// The success statuses, their bodies' schemas and media types when
    /// not JSON ([`Router::response`]).
    responses: Vec<(u16, Option<SchemaFn>, Option<String>)>,
}

/// Writes a type's schema (and the named schemas it refers to) for
/// [`ApiSchema`].
type SchemaFn = fn(&mut BTreeMap<String, Value>) -> Value;

/// `T`'s schema as a reference to its component, adding the component and
/// those it refers to.
fn schema_of<T: ToSchema>(components: &mut BTreeMap<String, Value>) -> Value {
    let mut nested = Vec::new();
    T::schemas(&mut nested);
    for (name, schema) in nested {
        components.insert(name, to_value(&schema));
    }
    let name = T::name().into_owned();
    components.insert(name.clone(), to_value(&T::schema()));
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// `schema` with `fields` required on top of what it requires itself.
fn with_required(schema: Value, fields: &[&str]) -> Value {
    if fields.is_empty() {
        return schema;
    }
    json!({ "allOf": [schema, { "required": fields }] })
}

/// The schema of raw bytes.
fn bytes(_: &mut BTreeMap<String, Value>) -> Value {
    plateau_contract::api_schema::binary()
}

/// The schema of a [`crate::Page`] of `T`s.
fn page_of<T: ToSchema>(components: &mut BTreeMap<String, Value>) -> Value {
    json!({
        "type": "object",
        "required": ["items", "nextCursor", "total"],
        "properties": {
            "items": { "type": "array", "items": schema_of::<T>(components) },
            "nextCursor": {
                "type": ["string", "null"],
                "description": "pass it as `cursor` for the next page; null on the last page",
            },
            "total": { "type": "integer", "minimum": 0, "description": "the number of items in the whole list" },
        },
    })
}

fn to_value(schema: &utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>) -> Value {
    serde_json::to_value(schema).expect("a schema serializes")
}

/// A matched route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'a> {
    pub method: Method,
    /// The pattern as written: `/notes/{id}`.
    pub pattern: &'a str,
    pub access: &'a Access,
    pub params: Params,
}

/// The route table of a plugin.
///
/// Each route gets its access rule and summary from the calls that follow
/// it; a route without one is [`Access::Authenticated`].
///
/// ```
/// # use plateau_sdk::{Router, Request, Params, Response, ApiError};
/// fn get_note(_req: &Request, p: &Params) -> Result<Response, ApiError> {
///     Err(ApiError::not_found(format!("note {} does not exist", &p["id"])))
/// }
/// let router = Router::new()
///     .get("/notes/{id}", get_note).scope("notes:read").summary("Get a note");
/// assert_eq!(router.routes()[0].path, "/notes/{id}");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Router {
    entries: Vec<Entry>,
}

impl Router {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route. Panics on a malformed pattern or a duplicate route.
    ///
    /// A component builds its router in every fresh instance, so there the
    /// table is checked once, when the host loads the component and asks
    /// for its routes ([`Router::routes`]): a bad table fails the load.
    /// Native builds check each route as it is added, so a typo fails the
    /// first unit test.
    pub fn route(mut self, method: Method, pattern: &str, handler: Handler) -> Self {
        self.entries.push(Entry {
            method,
            pattern: pattern.to_owned(),
            access: Access::Authenticated,
            summary: String::new(),
            description: String::new(),
            handler,
            request: None,
            request_type: None,
            request_optional: false,
            required: Vec::new(),
            responses: Vec::new(),
        });
        if cfg!(not(target_arch = "wasm32")) {
            self.check(self.entries.len() - 1);
        }
        self
    }

    /// Panics if route `i` has a malformed pattern or repeats an earlier
    /// route.
    fn check(&self, i: usize) {
        let entry = &self.entries[i];
        let pattern = Pattern::parse(&entry.pattern)
            .unwrap_or_else(|why| panic!("route pattern {:?} is invalid: {why}", entry.pattern));
        let duplicate = self.entries[..i].iter().any(|e| {
            e.method == entry.method
                && Pattern::parse(&e.pattern).is_ok_and(|p| p.same_shape(&pattern))
        });
        assert!(
            !duplicate,
            "route {} {} is declared twice",
            entry.method, entry.pattern
        );
    }

    pub fn get(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Get, pattern, handler)
    }

    pub fn post(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Post, pattern, handler)
    }

    pub fn put(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Put, pattern, handler)
    }

    pub fn patch(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Patch, pattern, handler)
    }

    pub fn delete(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Delete, pattern, handler)
    }

    /// The last route needs a token carrying `scope`.
    pub fn scope(self, scope: &str) -> Self {
        self.access(Access::Scope(scope.to_owned()))
    }

    /// The last route is open to anyone, without a token.
    pub fn public(self) -> Self {
        self.access(Access::Public)
    }

    /// The last route needs any valid token of the organisation (default).
    pub fn authenticated(self) -> Self {
        self.access(Access::Authenticated)
    }

    /// Sets the last route's access rule.
    pub fn access(mut self, access: Access) -> Self {
        self.last("access").access = access;
        self
    }

    /// Sets the last route's one-line summary.
    pub fn summary(mut self, summary: &str) -> Self {
        self.last("summary").summary = summary.to_owned();
        self
    }

    /// Sets the last route's description in the OpenAPI document: what
    /// it does and its rules, beyond the one-line summary (Markdown).
    pub fn description(mut self, text: &str) -> Self {
        self.last("description").description = text.to_owned();
        self
    }

    /// The last route takes a JSON body of type `T` (its schema goes into
    /// the host's OpenAPI document; the handler still parses the body).
    pub fn request<T: ToSchema>(mut self) -> Self {
        self.last("request").request = Some(schema_of::<T>);
        self
    }

    /// The last route takes an optional JSON body of type `T`: without
    /// one it reads every field's default.
    pub fn optional_request<T: ToSchema>(mut self) -> Self {
        let route = self.last("optional_request");
        route.request = Some(schema_of::<T>);
        route.request_optional = true;
        self
    }

    /// The last route needs these fields of its JSON body although its
    /// type leaves them optional (one type shared by a create and a
    /// `PATCH`, checked by the handler's own rules): the document marks
    /// them required for this route only. Panics without a request type.
    pub fn requires(mut self, fields: &[&'static str]) -> Self {
        let route = self.last("requires");
        assert!(
            route.request.is_some() && route.request_type.is_none(),
            "Router::requires needs a JSON request type before it"
        );
        route.required.extend_from_slice(fields);
        self
    }

    /// The last route takes a body of raw bytes of media type
    /// `content_type` (`format: binary` in the document): a file, or a
    /// foreign protocol's body the route decodes itself.
    pub fn request_bytes(mut self, content_type: &str) -> Self {
        let route = self.last("request_bytes");
        route.request = Some(bytes);
        route.request_type = Some(content_type.to_owned());
        self
    }

    /// The last route may answer `status` with a JSON body of type `T`
    /// (call it once per success status).
    pub fn response<T: ToSchema>(mut self, status: u16) -> Self {
        let route = self.last("response");
        route.responses.push((status, Some(schema_of::<T>), None));
        self
    }

    /// The last route may answer `status` with raw bytes of media type
    /// `content_type`.
    pub fn response_bytes(mut self, status: u16, content_type: &str) -> Self {
        let route = self.last("response_bytes");
        route
            .responses
            .push((status, Some(bytes), Some(content_type.to_owned())));
        self
    }

    /// The last route answers 200 with a [`crate::Page`] of `T`s.
    pub fn response_page<T: ToSchema>(mut self) -> Self {
        let route = self.last("response_page");
        route.responses.push((200, Some(page_of::<T>), None));
        self
    }

    /// The last route may answer `status` (204) without a body.
    pub fn empty_response(mut self, status: u16) -> Self {
        let route = self.last("empty_response");
        route.responses.push((status, None, None));
        self
    }

    /// The bodies of every route that declares one, for the host's OpenAPI
    /// document (answered at [`plateau_contract::api_schema::PATH`]).
    pub fn api_schema(&self) -> ApiSchema {
        let mut components = BTreeMap::new();
        let routes = self
            .entries
            .iter()
            .filter(|e| e.request.is_some() || !e.responses.is_empty() || !e.description.is_empty())
            .map(|e| RouteSchema {
                method: e.method.as_str().to_owned(),
                path: e.pattern.clone(),
                description: (!e.description.is_empty()).then(|| e.description.clone()),
                request: e
                    .request
                    .map(|f| with_required(f(&mut components), &e.required)),
                request_type: e.request_type.clone(),
                request_optional: e.request_optional,
                responses: e
                    .responses
                    .iter()
                    .map(|(status, schema, content_type)| ResponseSchema {
                        status: *status,
                        schema: schema.map(|f| f(&mut components)),
                        content_type: content_type.clone(),
                    })
                    .collect(),
            })
            .collect();
        ApiSchema { routes, components }
    }

    fn last(&mut self, what: &str) -> &mut Entry {
        self.entries
            .last_mut()
            .unwrap_or_else(|| panic!("Router::{what} needs a route before it"))
    }

    /// The routes for [`crate::Description`], in declaration order. Panics
    /// on a malformed pattern or a duplicate route.
    pub fn routes(&self) -> Vec<RouteInfo> {
        (0..self.entries.len()).for_each(|i| self.check(i));
        self.entries
            .iter()
            .map(|e| RouteInfo {
                method: e.method.as_str().to_owned(),
                path: e.pattern.clone(),
                access: e.access.clone(),
                summary: e.summary.clone(),
            })
            .collect()
    }

    /// Finds the route for `method` and `path`, or the 404 or 405 problem.
    pub fn recognize(&self, method: &str, path: &str) -> Result<Matched<'_>, ApiError> {
        self.find(method, path).map(|(entry, params)| Matched {
            method: entry.method,
            pattern: &entry.pattern,
            access: &entry.access,
            params,
        })
    }

    fn find(&self, method: &str, path: &str) -> Result<(&Entry, Params), ApiError> {
        self.find_hinted(method, path, "")
    }

    /// [`Router::find`], trying first the route named by `hint`: the
    /// pattern the host matched the request to, from this router's own
    /// route list, so a request routed by the host is matched once.
    fn find_hinted(
        &self,
        method: &str,
        path: &str,
        hint: &str,
    ) -> Result<(&Entry, Params), ApiError> {
        let segments = route::path_segments(path);
        let hinted = self
            .entries
            .iter()
            .filter(|e| !hint.is_empty() && e.pattern == hint && e.method.as_str() == method)
            .find_map(|e| Some((e, Pattern::split(&e.pattern).captures(&segments)?)));
        if let Some((entry, captures)) = hinted {
            return Ok((entry, Params::decode(&captures)));
        }
        let found = route::find(&self.entries, method, &segments, |e| {
            (e.method.as_str(), e.pattern.as_str())
        });
        match found {
            Found::Route { route, captures } => Ok((route, Params::decode(&captures))),
            Found::WrongMethod(allowed) => Err(ApiError::method_not_allowed(method, &allowed)),
            Found::NoRoute => Err(ApiError::not_found(format!(
                "no route matches {path}: check the path"
            ))),
        }
    }

    /// Checks the route's access rule against the caller (the host already
    /// did; this keeps a misrouted request from reaching a handler), then
    /// runs its handler.
    pub fn dispatch(&self, req: &Request) -> Result<Response, ApiError> {
        let (entry, params) = self.find_hinted(&req.method, &req.path, &req.route)?;
        match &entry.access {
            Access::Public => {}
            Access::Authenticated => {
                req.caller.organization()?;
            }
            Access::Scope(scope) => {
                req.caller.organization()?;
                req.caller.require_scope(scope)?;
            }
        }
        (entry.handler)(req, &params)
    }

    /// [`Router::dispatch`] with errors turned into problem responses.
    pub fn handle(&self, req: &Request) -> Response {
        self.dispatch(req).unwrap_or_else(ApiError::into_response)
    }
}
