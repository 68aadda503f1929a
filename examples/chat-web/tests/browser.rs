//! The chat-web example in headless Chromium (being written).
