//! MCP both ways — serving clients over stdio and Streamable HTTP, and calling upstream MCP
//! servers — arrives with the MCP gateway milestone. The crate exists now so that the
//! workspace has its final shape.
