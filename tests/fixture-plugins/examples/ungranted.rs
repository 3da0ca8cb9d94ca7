//! A plugin that imports outbound-http, which its tests do not grant.
//!
//! Its `describe` reads the host clock, so a test can tell whether any guest
//! code ran before the runtime refused it.

use plateau_fixture_plugins::exports::plateau::plugin::handler::Guest;
use plateau_fixture_plugins::plateau::plugin::types::{
    Description, Event, Request, Response, Tick,
};
use plateau_fixture_plugins::{description, route};

struct Fixture;

impl Guest for Fixture {
    fn describe() -> Description {
        let _ = plateau_fixture_plugins::plateau::plugin::clock::now_millis();
        description(
            "ungranted",
            vec![route("POST", "/ungranted/fetch")],
            &["http", "clock"],
        )
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
