//! A `wasi:cli` command for the cron tests: prints its arguments and its
//! environment to stdout, `to stderr` to stderr, and exits with the code
//! given as `--exit <code>` (0 without one).

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    println!("args: {}", args.join(" "));
    let mut env: Vec<(String, String)> = std::env::vars().collect();
    env.sort();
    for (key, value) in env {
        println!("env: {key}={value}");
    }
    eprintln!("to stderr");
    let code = args
        .iter()
        .position(|a| a == "--exit")
        .and_then(|i| args.get(i + 1))
        .and_then(|c| c.parse::<u8>().ok())
        .unwrap_or(0);
    if code != 0 {
        wasip2::cli::exit::exit_with_code(code);
    }
}
