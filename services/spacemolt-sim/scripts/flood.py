#!/usr/bin/env python3
# Initialize flood against a running simulator (docs/BENCHMARKS.md, "Simulator under an initialize flood"):
# flood.py N [host] [port] sends N bare MCP initialize requests over one keep-alive connection, alternating
# /mcp and /mcp/v2, and prints how many got each (HTTP status, Retry-After).
import http.client, json, sys, collections
n=int(sys.argv[1]); c=collections.Counter()
body=json.dumps({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}})
host=sys.argv[2] if len(sys.argv)>2 else "127.0.0.1"; port=int(sys.argv[3]) if len(sys.argv)>3 else 7100
conn=http.client.HTTPConnection(host,port)
for i in range(n):
    conn.request("POST","/mcp" if i%2==0 else "/mcp/v2",body,{"Content-Type":"application/json","Accept":"application/json, text/event-stream"})
    r=conn.getresponse(); r.read(); c[(r.status, r.getheader("Retry-After"))]+=1
print(dict(c))
