//! Changing stored messages: every change is a compare-and-swap on the
//! message that moves its visibility index entry with it, either buffered
//! to the request's commit ([`swap`]) or committed at once ([`claim`]).

use plateau_sdk::{ApiError, Bucket};

use crate::record::{Message, index_key};

/// A message as read, with the bytes a swap must find unchanged.
pub struct Loaded {
    pub raw: Vec<u8>,
    pub message: Message,
}

/// The message `id` of generation `sid`, if there is one.
pub fn load(bucket: &Bucket, sid: &str, id: &str) -> Result<Option<Loaded>, ApiError> {
    let Some(raw) = bucket.get_raw(&Message::key(sid, id))? else {
        return Ok(None);
    };
    let message = decode(&raw, id)?;
    Ok(Some(Loaded { raw, message }))
}

pub fn decode(raw: &[u8], id: &str) -> Result<Message, ApiError> {
    serde_json::from_slice(raw)
        .map_err(|e| ApiError::internal(format!("message {id} is not readable: {e}")))
}

fn encode(message: &Message) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(message)
        .map_err(|e| ApiError::internal(format!("message {} does not serialize: {e}", message.id)))
}

/// Replaces `loaded` by `next` (`None` deletes it) if nobody changed it
/// since it was read, and moves its index entry. False on a lost race.
pub fn swap(
    bucket: &Bucket,
    sid: &str,
    loaded: &Loaded,
    next: Option<&Message>,
) -> Result<bool, ApiError> {
    let id = &loaded.message.id;
    let encoded = next.map(encode).transpose()?;
    if !bucket.compare_and_swap(
        &Message::key(sid, id),
        Some(&loaded.raw),
        encoded.as_deref(),
    )? {
        return Ok(false);
    }
    let old_index = loaded.message.index_key(sid);
    match next {
        Some(next) => {
            let new_index = next.index_key(sid);
            if new_index != old_index {
                bucket.delete(&old_index)?;
            }
            bucket.set(&new_index, &next.index_entry())?;
        }
        None => {
            bucket.delete(&old_index)?;
        }
    }
    Ok(true)
}

/// Replaces `loaded` by `next` (`None` deletes it) at once, in a
/// transaction of its own with the move of its index entry and `also`
/// (more writes that must go with it); false when another request changed
/// the message first. Not rolled back if the request fails later.
pub fn claim(
    bucket: &Bucket,
    sid: &str,
    loaded: &Loaded,
    next: Option<&Message>,
    also: Vec<(String, Option<Vec<u8>>)>,
) -> Result<bool, ApiError> {
    let id = &loaded.message.id;
    let encoded = next.map(encode).transpose()?;
    let old_index = loaded.message.index_key(sid);
    let mut then = Vec::with_capacity(2 + also.len());
    match next {
        Some(next) => {
            let new_index = next.index_key(sid);
            if new_index != old_index {
                then.push((old_index, None));
            }
            then.push((new_index, Some(encode_index(next)?)));
        }
        None => then.push((old_index, None)),
    }
    then.extend(also);
    Ok(bucket.claim(
        &Message::key(sid, id),
        Some(&loaded.raw),
        encoded.as_deref(),
        &then,
    )?)
}

/// Writes that go with a claim: a key and its new value (None deletes).
pub type Writes = Vec<(String, Option<Vec<u8>>)>;

/// The writes that store `message` as new under generation `sid`, for a
/// claim that moves it there.
pub fn insert_writes(sid: &str, message: &Message) -> Result<Writes, ApiError> {
    Ok(vec![
        (Message::key(sid, &message.id), Some(encode(message)?)),
        (message.index_key(sid), Some(encode_index(message)?)),
    ])
}

fn encode_index(message: &Message) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(&message.index_entry())
        .map_err(|e| ApiError::internal(format!("index entry does not serialize: {e}")))
}

/// Stores a new message under generation `sid`; false if its id is taken.
pub fn insert(bucket: &Bucket, sid: &str, message: &Message) -> Result<bool, ApiError> {
    if !bucket.insert_new(&Message::key(sid, &message.id), message)? {
        return Ok(false);
    }
    bucket.set(
        &index_key(sid, message.visible_at, &message.id),
        &message.index_entry(),
    )?;
    Ok(true)
}
