//! The continuation baton (`_emdash_media_usage_continuation`): at most one continuation message
//! in flight.

use super::lease::CONTINUATION;
use crate::exec::{Error, Executor, Statement};

const CLAIM: &str = include_str!("../sql/continuation/claim.sql");
const RELEASE: &str = include_str!("../sql/continuation/release.sql");

/// Takes the baton under `token` for [`CONTINUATION`]'s lease length: when none is in flight,
/// when the one in flight expired, or when `handing_on` is the token of the message being
/// handled. False when another live continuation holds it.
pub async fn claim<E: Executor>(exec: &E, token: &str, handing_on: Option<&str>) -> Result<bool, Error> {
    let outcome = exec.run(CONTINUATION.claim(CLAIM, token).bind(handing_on)).await?;
    Ok(!outcome.rows.is_empty())
}

/// Drops the baton if `token` holds it (the chain ends).
pub async fn release<E: Executor>(exec: &E, token: &str) -> Result<(), Error> {
    exec.execute(Statement::new(RELEASE).bind(token)).await.map(drop)
}
