//! Measures the bus's publish-to-receive delay of switch events: subscribes to a subject
//! (default: every switch's packet-ins), reads the publication time hairpind stamped on each
//! event, and prints one JSON line with the delays' percentiles in microseconds once it has
//! `--count` events or `--seconds` have passed. Used by `python -m hairpin.bench.infep_bus`.
//!
//! ```text
//! bus_latency --url nats://127.0.0.1:4222 --user monitor --password-file pw --count 2000
//! ```

use std::time::Duration;

use controllet::bus::{now_ns, published_ns};
use futures_util::StreamExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), controllet::Error> {
    let mut url = "nats://127.0.0.1:4222".to_string();
    let mut user = None;
    let mut password_file = None;
    let mut subject = controllet::subjects::any::event(controllet::subjects::EventKind::PacketIn);
    let mut count = 1000usize;
    let mut seconds = 60u64;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => url = value,
            "--user" => user = Some(value),
            "--password-file" => password_file = Some(value),
            "--subject" => subject = value,
            "--count" => count = value.parse()?,
            "--seconds" => seconds = value.parse()?,
            _ => return Err(format!("unknown flag {flag}").into()),
        }
    }
    let mut options = async_nats::ConnectOptions::new();
    if let (Some(user), Some(file)) = (user, password_file) {
        options = options.user_and_password(user, std::fs::read_to_string(file)?.trim().into());
    }
    let client = options.connect(url.as_str()).await?;
    let mut events = client.subscribe(subject).await?;
    client.flush().await?;
    println!("{{\"ready\":true}}");
    let mut delays_us: Vec<f64> = Vec::with_capacity(count);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(seconds);
    while delays_us.len() < count {
        let msg = tokio::select! {
            msg = events.next() => msg,
            _ = tokio::time::sleep_until(deadline) => None,
        };
        let Some(msg) = msg else { break };
        if let Some(sent) = published_ns(&msg) {
            delays_us.push(now_ns().saturating_sub(sent) as f64 / 1000.0);
        }
    }
    delays_us.sort_by(f64::total_cmp);
    let pct = |p: f64| {
        let i = ((delays_us.len() as f64 - 1.0) * p).round() as usize;
        delays_us.get(i).copied().unwrap_or(f64::NAN)
    };
    println!(
        "{{\"events\":{},\"p50_us\":{:.1},\"p5_us\":{:.1},\"p95_us\":{:.1},\"p99_us\":{:.1},\"max_us\":{:.1}}}",
        delays_us.len(),
        pct(0.5),
        pct(0.05),
        pct(0.95),
        pct(0.99),
        pct(1.0)
    );
    Ok(())
}
