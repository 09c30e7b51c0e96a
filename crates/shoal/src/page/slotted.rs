//! Slotted page layout (in progress).
