//! A plugin whose handler grows memory without end: it must hit the memory cap.

use plateau_fixture_plugins::exports::plateau::plugin::handler::Guest;
use plateau_fixture_plugins::plateau::plugin::types::{
    Description, Event, Request, Response, Tick,
};
use plateau_fixture_plugins::{description, route};

struct Fixture;

impl Guest for Fixture {
    fn describe() -> Description {
        description("alloc-bomb", vec![route("GET", "/alloc-bomb/boom")], &[])
    }

    fn handle(req: Request) -> Response {
        let mut hoard: Vec<Vec<u8>> = Vec::new();
        loop {
            let chunk = vec![req.body.len() as u8 + 1; 1 << 20];
            hoard.push(std::hint::black_box(chunk));
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
