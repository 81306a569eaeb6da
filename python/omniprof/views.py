"""omniprof.views — the views of a connection as tables: pandas DataFrames when pandas is
installed, lists of dicts otherwise; and the HTML that Jupyter shows for a connection.

    con = omniprof.connect("app_results.db")
    con.views()                     # the view names, from the connection's own schema
    con.kernels()                   # one method per view: kernels, regions, samples, top, busy, ...
    con.view("memory_copies", where="size > ?", params=(1 << 20,), limit=10)
    con.sql("SELECT name, count(*) AS n FROM kernels GROUP BY name")
    con                             # in Jupyter: inputs, views with row counts, the top table

The list of views is the connection's schema (what the C library's union SQL made), never a
list kept here."""

import html


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def table(cursor):
    """The rows of an executed cursor: a DataFrame (columns named as the SELECT names them) when
    pandas is installed, else a list of dicts."""
    cols = [d[0] for d in cursor.description or ()]
    rows = cursor.fetchall()
    pd = _pandas()
    if pd is not None:
        return pd.DataFrame.from_records(rows, columns=cols)
    return [dict(zip(cols, r)) for r in rows]


def view_names(con):
    """The names of the views a connection offers, sorted."""
    import sqlite3
    cur = sqlite3.Connection.execute(
        con, "SELECT name FROM sqlite_temp_master WHERE type = 'view' UNION "
        "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY 1")
    return [r[0] for r in cur.fetchall()]


def _quote(name):
    return '"' + name.replace('"', '""') + '"'


def select(con, name, where=None, params=(), order_by=None, limit=None, error=ValueError):
    names = view_names(con)
    if name not in names:
        raise error("no view named %r; the views are: %s" % (name, ", ".join(names)), 2)
    sql = "SELECT * FROM " + _quote(name)
    if where:
        sql += " WHERE " + where
    if order_by:
        sql += " ORDER BY " + order_by
    if limit is not None:
        sql += " LIMIT %d" % int(limit)
    return table(con.execute(sql, params))


def html_of(con, inputs, top_rows=10):
    """HTML for a connection: its inputs, each view with its row count, the first rows of top."""
    out = ["<div class='omniprof'><b>omniprof</b> connection over %d database(s)<ul>" % len(inputs)]
    out += ["<li><code>%s</code></li>" % html.escape(str(p)) for p in inputs]
    out.append("</ul><table><tr><th>view</th><th>rows</th></tr>")
    import sqlite3
    for name in view_names(con):
        try:
            n = sqlite3.Connection.execute(con, "SELECT count(*) FROM " + _quote(name)).fetchone()[0]
        except sqlite3.DatabaseError as e:
            n = "error: %s" % e
        out.append("<tr><td><code>%s</code></td><td>%s</td></tr>" % (html.escape(name), html.escape(str(n))))
    out.append("</table>")
    try:
        cur = sqlite3.Connection.execute(con, "SELECT * FROM top LIMIT %d" % top_rows)
        cols = [d[0] for d in cur.description]
        rows = cur.fetchall()
    except sqlite3.DatabaseError:
        rows = []
    if rows:
        out.append("<p>top</p><table><tr>%s</tr>" % "".join("<th>%s</th>" % html.escape(c) for c in cols))
        for r in rows:
            out.append("<tr>%s</tr>" % "".join("<td>%s</td>" % html.escape(str(v)) for v in r))
        out.append("</table>")
    out.append("</div>")
    return "".join(out)
