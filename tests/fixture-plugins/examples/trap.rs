//! A plugin that traps: by a panic, or by an `unreachable` instruction.

use plateau_fixture_plugins::exports::plateau::plugin::handler::Guest;
use plateau_fixture_plugins::plateau::plugin::types::{
    Description, Event, Request, Response, Tick,
};
use plateau_fixture_plugins::{description, route};

struct Fixture;

impl Guest for Fixture {
    fn describe() -> Description {
        description(
            "trap",
            vec![
                route("GET", "/trap/panic"),
                route("GET", "/trap/unreachable"),
            ],
            &[],
        )
    }

    fn handle(req: Request) -> Response {
        if req.path.ends_with("/unreachable") {
            #[cfg(target_arch = "wasm32")]
            core::arch::wasm32::unreachable();
        }
        panic!("trap fixture panicked on {}", req.path)
    }

    fn on_tick(_t: Tick) -> Result<(), String> {
        Ok(())
    }

    fn on_event(_e: Event) -> Result<(), String> {
        Ok(())
    }
}

plateau_fixture_plugins::export!(Fixture);
