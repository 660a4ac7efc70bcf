"""The chatroom (issue 5): who answers a message (dispatch), claims, invoking crows,
Quill and Boss, and each room's budgets. post_message (nests/actions/messages.py) is the
entry point; everything here runs from it or from the crow-invocation task."""
