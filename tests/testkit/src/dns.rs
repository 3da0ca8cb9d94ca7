//! A DNS server the test controls (UDP on loopback): it answers A, AAAA,
//! CNAME, TXT and PTR questions from records the test sets while it runs, for
//! the platform's resolver (`PLATEAU_DNS_RESOLVER`) and an ACME test CA
//! (pebble's `-dnsserver`) alike. A name it has no record of answers
//! NXDOMAIN; a CNAME is followed within its own records.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use hickory_proto::op::{Message, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, CNAME, PTR, TXT};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::net::UdpSocket;

/// One record of the zone.
#[derive(Clone, Debug)]
pub enum DnsAnswer {
    Ip(IpAddr),
    Cname(String),
    Txt(String),
    /// A name, at an address's reverse name (`DnsServer::reverse_name`).
    Ptr(String),
}

/// The running server; stops when dropped.
pub struct DnsServer {
    pub addr: SocketAddr,
    records: Arc<Mutex<HashMap<String, Vec<DnsAnswer>>>>,
    task: tokio::task::JoinHandle<()>,
}

fn key(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

impl DnsServer {
    pub async fn start() -> DnsServer {
        let socket = UdpSocket::bind("127.0.0.1:0")
            .await
            .expect("binding the DNS server");
        let addr = socket.local_addr().unwrap();
        let records: Arc<Mutex<HashMap<String, Vec<DnsAnswer>>>> = Arc::default();
        let zone = records.clone();
        let task = tokio::spawn(async move {
            let mut buf = vec![0u8; 4096];
            loop {
                let Ok((n, peer)) = socket.recv_from(&mut buf).await else {
                    continue;
                };
                if let Some(reply) = answer(&zone, &buf[..n]) {
                    let _ = socket.send_to(&reply, peer).await;
                }
            }
        });
        DnsServer {
            addr,
            records,
            task,
        }
    }

    /// Adds a record at `name`.
    pub fn add(&self, name: &str, answer: DnsAnswer) {
        let mut records = self.records.lock().unwrap();
        records.entry(key(name)).or_default().push(answer);
    }

    /// The name PTR records of `ip` live at (`4.3.2.1.in-addr.arpa`).
    pub fn reverse_name(ip: IpAddr) -> String {
        Name::from(ip).to_string()
    }

    /// Removes every record at `name`.
    pub fn clear(&self, name: &str) {
        self.records.lock().unwrap().remove(&key(name));
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn answer(zone: &Mutex<HashMap<String, Vec<DnsAnswer>>>, query: &[u8]) -> Option<Vec<u8>> {
    let request = Message::from_vec(query).ok()?;
    let mut reply = Message::response(request.metadata.id, request.metadata.op_code);
    reply.metadata.recursion_desired = request.metadata.recursion_desired;
    reply.metadata.recursion_available = true;
    reply.metadata.authoritative = true;
    let records = zone.lock().unwrap();
    for q in &request.queries {
        reply.add_query(q.clone());
        let wanted = q.query_type();
        let mut name = q.name().clone();
        let mut found_any = false;
        // Follow CNAMEs within the zone, as a recursive resolver would.
        for _ in 0..8 {
            let Some(list) = records.get(&key(&name.to_string())) else {
                break;
            };
            found_any = true;
            let mut next = None;
            for a in list {
                let data = match (a, wanted) {
                    (DnsAnswer::Ip(IpAddr::V4(ip)), RecordType::A) => RData::A(A(*ip)),
                    (DnsAnswer::Ip(IpAddr::V6(ip)), RecordType::AAAA) => RData::AAAA(AAAA(*ip)),
                    (DnsAnswer::Txt(text), RecordType::TXT) => {
                        RData::TXT(TXT::new(vec![text.clone()]))
                    }
                    (DnsAnswer::Ptr(target), RecordType::PTR) => {
                        RData::PTR(PTR(Name::from_ascii(format!("{}.", key(target))).ok()?))
                    }
                    (DnsAnswer::Cname(target), _) => {
                        let target = Name::from_ascii(format!("{}.", key(target))).ok()?;
                        next = Some(target.clone());
                        RData::CNAME(CNAME(target))
                    }
                    _ => continue,
                };
                reply.add_answer(Record::from_rdata(name.clone(), 5, data));
            }
            match next {
                Some(target) if wanted != RecordType::CNAME => name = target,
                _ => break,
            }
        }
        if !found_any {
            reply.metadata.response_code = ResponseCode::NXDomain;
        }
    }
    reply.to_vec().ok()
}
