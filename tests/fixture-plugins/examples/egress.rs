//! A plugin that fetches the URL in the request body through outbound-http.

use plateau_fixture_plugins::exports::plateau::plugin::handler::Guest;
use plateau_fixture_plugins::plateau::plugin::types::{
    Description, Event, Request, Response, Tick,
};
use plateau_fixture_plugins::{description, route};

struct Fixture;

impl Guest for Fixture {
    fn describe() -> Description {
        description("egress", vec![route("POST", "/egress/fetch")], &["http"])
    }

    fn handle(req: Request) -> Response {
        plateau_fixture_plugins::fetch(&String::from_utf8_lossy(&req.body))
    }

    fn on_tick(_t: Tick) -> Result<(), String> {
        Ok(())
    }

    fn on_event(_e: Event) -> Result<(), String> {
        Ok(())
    }
}

plateau_fixture_plugins::export!(Fixture);
