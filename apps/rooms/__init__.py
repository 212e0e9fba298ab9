"""Rooms: conversations, transcripts, runs, the run worker and the WebSocket consumer."""
