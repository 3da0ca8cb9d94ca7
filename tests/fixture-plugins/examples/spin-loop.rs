//! A plugin whose handler never returns: it must hit the deadline.

use plateau_fixture_plugins::exports::plateau::plugin::handler::Guest;
use plateau_fixture_plugins::plateau::plugin::types::{
    Description, Event, Request, Response, Tick,
};
use plateau_fixture_plugins::{description, route};

struct Fixture;

impl Guest for Fixture {
    fn describe() -> Description {
        description("spin-loop", vec![route("GET", "/spin-loop/forever")], &[])
    }

    fn handle(req: Request) -> Response {
        let mut n = req.body.len() as u64;
        loop {
            n = std::hint::black_box(n.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }

    fn on_tick(_t: Tick) -> Result<(), String> {
        Ok(())
    }

    fn on_event(_e: Event) -> Result<(), String> {
        Ok(())
    }
}

plateau_fixture_plugins::export!(Fixture);
