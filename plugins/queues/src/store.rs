//! Changing stored messages: every change is a compare-and-swap on the
//! message that moves its visibility index entry with it.

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
