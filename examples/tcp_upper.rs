//! An application on the linerate stack: a line-oriented TCP service that answers every line
//! in upper case, and a client that sends it three lines, on two hosts of the in-process
//! testbed (virtual time, so the run is the same every time).
//!
//! Run it with `cargo run --release -p testbed --example tcp_upper`.
//!
//! It uses only the public socket-like calls of `net::Stack`: `tcp_listen`, `tcp_accept`,
//! `tcp_connect`, `tcp_send`, `tcp_recv`, `tcp_shutdown`, `tcp_close`; the testbed polls the
//! stacks (`Testbed::step`) between the application's calls.

use net::{Recv, TcpHandle};
use std::time::Duration;
use testbed::{HostStack, Testbed, TestbedConfig};

/// The service's side of one connection: bytes of an unfinished line and replies not yet
/// taken by the send buffer.
#[derive(Default)]
struct Session {
    line: Vec<u8>,
    out: Vec<u8>,
}

impl Session {
    /// Read what arrived, answer every complete line; returns true once the client has closed
    /// and every reply is in the send buffer.
    fn serve(&mut self, stack: &mut HostStack, h: TcpHandle) -> Result<bool, net::NetError> {
        let mut buf = [0u8; 2048];
        let mut eof = false;
        loop {
            match stack.tcp_recv(h, &mut buf)? {
                Recv::Data(n) => {
                    for &b in &buf[..n] {
                        self.line.push(b);
                        if b == b'\n' {
                            self.out.extend(self.line.drain(..).map(|c| c.to_ascii_uppercase()));
                        }
                    }
                }
                Recv::WouldBlock => break,
                Recv::Eof => {
                    eof = true;
                    break;
                }
            }
        }
        let sent = stack.tcp_send(h, &self.out)?;
        self.out.drain(..sent);
        Ok(eof && self.out.is_empty())
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut tb = Testbed::new(TestbedConfig::default());
    let server = tb.add_host("10.0.0.2/24")?;
    let client = tb.add_host("10.0.0.1/24")?;
    let listener = tb.host(server).tcp_listen(7000, 16)?;
    let conn = tb.host(client).tcp_connect("10.0.0.2:7000".parse::<std::net::SocketAddr>()?)?;

    let request = b"hello\nlinerate speaks tcp\nbye\n";
    let (mut sent, mut reply) = (0, Vec::new());
    let (mut accepted, mut session, mut closed) = (None, Session::default(), false);
    let limit = tb.now() + Duration::from_secs(5);
    let mut buf = [0u8; 2048];
    while tb.now() < limit {
        tb.step()?;
        // The service.
        if accepted.is_none() {
            accepted = tb.host(server).tcp_accept(listener);
        }
        if let Some(h) = accepted {
            if !closed && session.serve(tb.host(server), h)? {
                tb.host(server).tcp_close(h)?;
                closed = true;
            }
        }
        // The client: send once connected, half-close, read replies until the service closes.
        let c = tb.host(client);
        match c.tcp_connect_result(conn)? {
            None => continue,
            Some(Err(e)) => return Err(format!("connect failed: {e:?}").into()),
            Some(Ok(())) => {}
        }
        if sent < request.len() {
            sent += c.tcp_send(conn, &request[sent..])?;
            if sent == request.len() {
                c.tcp_shutdown(conn)?;
            }
        }
        match c.tcp_recv(conn, &mut buf)? {
            Recv::Data(n) => reply.extend_from_slice(&buf[..n]),
            Recv::WouldBlock => {}
            Recv::Eof => {
                c.tcp_close(conn)?;
                break;
            }
        }
    }
    let elapsed = tb.now().as_nanos() as f64 / 1e6;
    print!("{}", String::from_utf8_lossy(&reply));
    let expected: Vec<u8> = request.to_ascii_uppercase();
    if reply != expected {
        return Err(format!("the reply was {} bytes, expected {}", reply.len(), expected.len()).into());
    }
    println!("{} bytes each way over linerate TCP in {elapsed:.3} ms of virtual time", request.len());
    Ok(())
}
