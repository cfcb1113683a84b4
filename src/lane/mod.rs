//! What the tick's lanes share: how a lane sizes its batches ([`adaptive`]).

pub mod adaptive;
