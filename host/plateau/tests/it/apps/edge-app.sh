#!/bin/sh
# One HTTP/1.1 exchange on stdin and stdout (nc -e): a WebSocket echo
# for an Upgrade, else a text answer with the caching headers its query
# names: cc (Cache-Control), etag (quoted here; an If-None-Match that
# lists it gets a 304), vary. The body counts the answers: "<path> <lang> #<n>".
cr=$(printf '\r')
read -r method target version
upgrade=; key=; inm=; lang=; xff=; fwd=
while IFS= read -r line; do
    line=${line%"$cr"}
    [ -z "$line" ] && break
    value=${line#*: }
    case "$(echo "${line%%:*}" | tr A-Z a-z)" in
        upgrade) upgrade=$value ;;
        sec-websocket-key) key=$value ;;
        if-none-match) inm=$value ;;
        accept-language) lang=$value ;;
        x-forwarded-for) xff=$value ;;
        forwarded) fwd=$value ;;
    esac
done
if [ -n "$upgrade" ]; then
    accept=$(printf '%s258EAFA5-E914-47DA-95CA-C5AB0DC85B11' "$key" | sha1sum | cut -d' ' -f1 | xxd -r -p | base64)
    printf 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n' "$accept"
    # Frames of up to 125 bytes, unmasked and sent back; a close ends it.
    while :; do
        set -- $(dd bs=1 count=2 2>/dev/null | od -An -tu1)
        [ $# -eq 2 ] || exit 0
        b0=$1
        len=$(($2 & 127))
        [ "$len" -lt 126 ] || exit 0
        set -- $(dd bs=1 count=4 2>/dev/null | od -An -tu1)
        out=$(printf '\\%03o\\%03o' "$b0" "$len")
        i=0
        for b in $(dd bs=1 count="$len" 2>/dev/null | od -An -tu1); do
            eval "m=\${$((i % 4 + 1))}"
            out="$out$(printf '\\%03o' $((b ^ m)))"
            i=$((i + 1))
        done
        printf "$out"
        [ $((b0 & 15)) -eq 8 ] && exit 0
    done
fi
path=${target%%\?*}
query=
case "$target" in *\?*) query=${target#*\?} ;; esac
cc=; etag=; vary=
for pair in $(echo "$query" | tr '&' ' '); do
    case "$pair" in
        cc=*) cc=${pair#cc=} ;;
        etag=*) etag=\"${pair#etag=}\" ;;
        vary=*) vary=${pair#vary=} ;;
    esac
done
n=$(($(cat /tmp/answers 2>/dev/null || echo 0) + 1))
echo "$n" > /tmp/answers
status="200 OK"
body="$path $lang #$n"
case "$inm" in
    *"$etag"*) [ -n "$etag" ] && status="304 Not Modified" && body= ;;
esac
printf 'HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %s\r\n' "$status" "${#body}"
[ -n "$cc" ] && printf 'Cache-Control: %s\r\n' "$cc"
[ -n "$etag" ] && printf 'ETag: %s\r\n' "$etag"
[ -n "$vary" ] && printf 'Vary: %s\r\n' "$vary"
printf 'X-Seen-For: %s\r\nX-Seen-Forwarded: %s\r\n' "$xff" "$fwd"
printf '\r\n%s' "$body"
