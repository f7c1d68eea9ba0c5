//! The results service over HTTP on loopback, on SQLite and on PostgreSQL, and its pages in a
//! headless browser.

mod api;
mod binary;
mod browser;
mod harness;
mod load;
