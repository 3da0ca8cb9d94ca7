//! The `echo` plugin, version 2.0.0.

use plateau_fixture_plugins::exports::plateau::plugin::handler::Guest;
use plateau_fixture_plugins::plateau::plugin::types::{
    Description, Event, Request, Response, Tick,
};

struct Echo;

impl Guest for Echo {
    fn describe() -> Description {
        plateau_fixture_plugins::echo::describe("2.0.0")
    }

    fn handle(req: Request) -> Response {
        plateau_fixture_plugins::echo::handle(req, "2.0.0")
    }

    fn on_tick(t: Tick) -> Result<(), String> {
        plateau_fixture_plugins::echo::on_tick(t)
    }

    fn on_event(e: Event) -> Result<(), String> {
        plateau_fixture_plugins::echo::on_event(e)
    }
}

plateau_fixture_plugins::export!(Echo);
