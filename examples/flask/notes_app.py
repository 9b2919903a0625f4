"""The m0 Flask example: a template page, a JSON view, a form POST with a
CSRF token (kept in Flask's signed session cookie), Flask's own static files
(sent by m0 with sendfile through wsgi.file_wrapper), and an error view.

Served with `frontend.app: "notes_app:create_app()"` (a factory call).
"""
import hmac
import os
import secrets

from flask import Flask, abort, jsonify, render_template, request, session

NOTES = [
    {"id": 1, "title": "m0 serves Flask", "body": "on embedded CPython"},
    {"id": 2, "title": "static files", "body": "go out with sendfile"},
]


def csrf_token():
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return session["csrf"]


def create_app():
    app = Flask(__name__)
    # An example key for a local demo; a deployment sets FLASK_SECRET_KEY.
    app.secret_key = os.environ.get("FLASK_SECRET_KEY", "m0-example-not-a-secret")
    app.jinja_env.globals["csrf_token"] = csrf_token

    @app.get("/")
    def index():
        return render_template("index.html", notes=NOTES)

    @app.get("/api/notes")
    def api_notes():
        return jsonify(notes=NOTES, count=len(NOTES))

    @app.route("/form", methods=["GET", "POST"])
    def form():
        if request.method == "POST":
            sent = request.form.get("csrf_token", "")
            if not hmac.compare_digest(sent, session.get("csrf", "")) or not sent:
                abort(403)
            return render_template("thanks.html", text=request.form.get("text", ""))
        return render_template("form.html")

    @app.get("/boom")
    def boom():
        raise RuntimeError("the example's deliberate error")

    return app
