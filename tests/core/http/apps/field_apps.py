"""A WSGI app whose response fields carry what real apps send: Django's
Set-Cookie values start with a space, and a value may end in whitespace
(the WSGI frontend itself refuses a name that is no token)."""


def app(environ, start_response):
    start_response("200 OK", [
        ("Content-Type", "text/plain"),
        ("Set-Cookie", " csrftoken=abc; Path=/"),
        ("X-Padded", "\t value \t"),
    ])
    return [b"ok"]
