# A private ClickHouse server for the export tests (sourced): Debian 12's ClickHouse (18.16) ships
# clickhouse-server and clickhouse-client but no clickhouse-local, so a test starts a server of its
# own on 127.0.0.1, with its data in the test's directory, and stops it when the test ends.
#   ch_start DIR    starts it (exits 77, SKIP, when ClickHouse is not installed); sets CH_PORT (the
#                   native protocol's, for clickhouse-client) and CH_HTTP_PORT (the HTTP interface's,
#                   for scripts that run many queries: a client start costs 0.2 s of CPU)
#   ch Q [ARGS]     runs one query (more with --multiquery), its output on stdout
#   ch_stop         stops it (ch_start arranges this for the shell's exit too)

ch_pid=
ch_stop() {
    if [ -n "$ch_pid" ]; then
        kill "$ch_pid" 2>/dev/null
        for _ in $(seq 1 100); do kill -0 "$ch_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$ch_pid" 2>/dev/null
        ch_pid=
    fi
}

ch() {
    local q=$1
    shift
    timeout -k 5 120 clickhouse-client --host 127.0.0.1 --port "$CH_PORT" --query "$q" "$@"
}

ch_start() {
    local dir=$1
    if ! command -v clickhouse-server >/dev/null || ! command -v clickhouse-client >/dev/null; then
        echo "SKIP: clickhouse-server and clickhouse-client are not installed (apt-get install clickhouse-server clickhouse-client)"
        exit 77
    fi
    mkdir -p "$dir/data" "$dir/tmp"
    local try
    for try in 1 2 3 4 5; do
        CH_PORT=$((20000 + (RANDOM % 20000)))
        CH_HTTP_PORT=$((CH_PORT + 1))
        cat >"$dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/server.log</log><errorlog>$dir/server.err</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>$CH_PORT</tcp_port>
  <http_port>$CH_HTTP_PORT</http_port>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <users_config>$dir/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>16777216</mark_cache_size>
  <remote_servers>
    <mtrace_test>
      <shard><replica><host>127.0.0.1</host><port>$CH_PORT</port></replica></shard>
    </mtrace_test>
  </remote_servers>
</yandex>
XML
        cat >"$dir/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
        clickhouse-server --config-file="$dir/config.xml" >"$dir/server.out" 2>&1 &
        ch_pid=$!
        trap ch_stop EXIT
        local i
        for i in $(seq 1 150); do
            if ! kill -0 "$ch_pid" 2>/dev/null; then
                ch_pid=
                break # the port was taken, most likely: another one
            fi
            if clickhouse-client --host 127.0.0.1 --port "$CH_PORT" --query 'SELECT 1' >/dev/null 2>&1; then
                return 0
            fi
            sleep 0.2
        done
        ch_stop
    done
    echo "FAIL: clickhouse-server did not start; its log:"
    tail -20 "$dir/server.err" "$dir/server.out" 2>/dev/null
    exit 1
}
