//! A check's history: its results and its alerts, newest first, paginated
//! like core lists with cursors the host signs.

use plateau_sdk::{ApiError, Bucket, Namespace, Params, Request, Response, paginate_sorted};

use super::records::{self, AlertRecord, RunResult};

/// `GET /checks/{id}/results`: the last 100 runs, newest first.
pub fn results(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (bucket, id) = open(req, params)?;
    let mut items = Vec::new();
    for entry in bucket.list_all(&records::result_prefix(&id))? {
        items.push(entry.json::<RunResult>()?);
    }
    let page = paginate_sorted(
        &format!("results:{id}"),
        items,
        &req.page_query()?,
        |r: &RunResult| u64::MAX - r.run,
    )?;
    Ok(page.into_response())
}

/// `GET /checks/{id}/alerts`: the last 50 alerts, newest first, with the
/// state of their webhook delivery.
pub fn alerts(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (bucket, id) = open(req, params)?;
    let mut items = Vec::new();
    for entry in bucket.list_all(&records::alert_prefix(&id))? {
        items.push(entry.json::<AlertRecord>()?);
    }
    let page = paginate_sorted(
        &format!("alerts:{id}"),
        items,
        &req.page_query()?,
        |a: &AlertRecord| u64::MAX - a.number,
    )?;
    Ok(page.into_response())
}

/// The caller's bucket, after checking that check `id` is in it.
fn open(req: &Request, params: &Params) -> Result<(Bucket, String), ApiError> {
    let org = req.caller.organization()?.to_owned();
    let bucket = Bucket::open(Namespace::Organization(org))?;
    let id = params["id"].to_owned();
    records::find(&bucket, &id)?;
    Ok((bucket, id))
}
