//! The bus, inside a controllet's own network namespace: the host listens on 127.0.0.1 there
//! and copies each connection to the real bus, so the controllet reaches the bus and nothing
//! else. At most [`MAX_CONNECTIONS`] at a time per controllet.

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// Connections one controllet may hold open to the bus.
pub const MAX_CONNECTIONS: usize = 16;

/// Relays every connection to `listener` to `target` until the task is dropped.
pub async fn relay(listener: TcpListener, target: String) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((mut inside, _)) = listener.accept().await else {
            // Out of descriptors, most likely: wait rather than spin.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let Ok(permit) = Arc::clone(&slots).try_acquire_owned() else {
            continue; // dropped: over the limit
        };
        let target = target.clone();
        tokio::spawn(async move {
            let _permit = permit;
            if let Ok(mut bus) = TcpStream::connect(&target).await {
                let _ = inside.set_nodelay(true);
                let _ = bus.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut inside, &mut bus).await;
            }
        });
    }
}
