// Tensor parallelism through the `drift` binary (docs/tensor_parallel.md): --tensor-parallel-size
// and the example config give one rank's tokens, with the ranks the engine starts itself or, as
// on other machines, started by hand with `drift rank`; bad `drift rank` arguments are errors.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "support/test_data.h"

namespace drift {
namespace {

using test::json_lines;
using test::run_command;
using test::shell_quote;

std::string drift() { return shell_quote(test::drift_exe()); }
std::string stories() { return test::test_data_path("models/stories260K"); }
const char* kPrompts = "--prompt 'Once upon a time' --prompt 'The little dog was sad because' --prompt-ids 1,317";

std::vector<nlohmann::json> output_ids(const std::string& command) {
  auto r = run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<nlohmann::json> ids;
  for (const auto& line : json_lines(r.out)) ids.push_back(line["output_ids"]);
  return ids;
}

TEST(TensorParallelCli, SplitRunsGiveOneRanksTokens) {
  const std::string base =
      drift() + " generate --model " + shell_quote(stories()) + " " + kPrompts + " --max-new-tokens 40 --json";
  const auto one = output_ids(base);
  ASSERT_EQ(one.size(), 3u);
  EXPECT_EQ(output_ids(base + " --tensor-parallel-size 2"), one);
  EXPECT_EQ(output_ids(base + " --tensor-parallel-size 4"), one);
  EXPECT_EQ(output_ids(test::drift_in_source(std::string("generate --config configs/stories260k-tp2.toml ") + kPrompts +
                                             " --max-new-tokens 40 --json")),
            one);
  auto bad = run_command(base + " --tensor-parallel-size 3");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("tensor_parallel_size = 3 does not divide the model's num_attention_heads = 8"),
            std::string::npos)
      << bad.err;
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// Ranks on another machine: the engine starts only local_ranks = 1 (itself) and waits at a fixed
// address for rank 1, started by hand.
TEST(TensorParallelCli, RanksStartedElsewhereJoinByTheRendezvousAddress) {
  const std::string dir = test::make_temp_dir("tp-cli");
  const std::string address = "127.0.0.1:" + std::to_string(free_port());
  std::ofstream(dir + "/tp.toml") << "schema_version = 1\n[model]\npath = \"" << stories()
                                  << "\"\n[engine]\ntensor_parallel_size = 2\n[tensor_parallel]\nrendezvous = \""
                                  << address << "\"\nlocal_ranks = 1\nstart_timeout_s = 60\n";
  const std::string rank1 = drift() + " rank --rendezvous " + address + " --rank 1 --size 2 2>" + dir + "/rank1.log &";
  const auto split = output_ids(rank1 + " " + drift() + " generate --config " + dir + "/tp.toml " + kPrompts +
                                " --max-new-tokens 24 --json");
  const auto one = output_ids(drift() + " generate --model " + shell_quote(stories()) + " " + kPrompts +
                              " --max-new-tokens 24 --json");
  EXPECT_EQ(split, one);
}

// tools/random_checkpoint.py's Llama-3-70B preset (issue 36's checkpoint maker), at a small
// override of its sizes: sharded files with an index and the published Llama-3 config, which the
// engine loads whole and split (4 ranks: 8 heads over 2 KV heads, each KV head on two ranks).
TEST(TensorParallelCli, TheLlama3ShapeMakersShardedCheckpointRunsSplit) {
  const std::string dir = test::make_temp_dir("llama3-shape");
  auto made = run_command("python3 " + shell_quote(test::source_dir() + "/tools/random_checkpoint.py") + " " +
                          shell_quote(dir) +
                          " --preset llama3-70b --layers 2 --hidden 256 --intermediate 512 --vocab 1000 --heads 8 "
                          "--kv-heads 2 --shard-gb 0.001");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("(llama3-70b shape) in 4 file(s)"), std::string::npos) << made.out;
  std::ifstream config(dir + "/config.json");
  const auto json = nlohmann::json::parse(config);
  EXPECT_EQ(json["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(json["tie_word_embeddings"], false);
  const std::string base = drift() + " generate --model " + shell_quote(dir) +
                           " --prompt-ids 5,6,7,8 --prompt-ids 9,10 --max-new-tokens 8 --ignore-eos --json";
  const auto one = output_ids(base);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(output_ids(base + " --tensor-parallel-size 4"), one);
}

// drift serve on a split engine whose rank is killed: the request in flight fails, and the server
// ends with an error naming the rank (a supervisor restarts it) instead of failing every request.
TEST(TensorParallelCli, ServeEndsWithAnErrorWhenARankDies) {
  const std::string dir = test::make_temp_dir("tp-serve");
  std::ofstream(dir + "/run.sh") << R"sh(set -u
drift=$1; model=$2; dir=$3
"$drift" serve --model "$model" --tensor-parallel-size 2 --port 0 > "$dir/out" 2> "$dir/err" &
pid=$!
for i in $(seq 200); do grep -q listening "$dir/out" && break; sleep 0.05; done
port=$(sed -n 's/.*:\([0-9]*\)$/\1/p' "$dir/out" | head -1)
for p in /proc/[0-9]*; do
  [ "$(cut -d' ' -f4 "$p/stat" 2>/dev/null)" = "$pid" ] && kill -9 "${p#/proc/}" && echo "killed rank"
done
python3 - "$port" <<'PY'
import json, sys, urllib.request, urllib.error
body = json.dumps({"prompt": "Once upon a time", "max_tokens": 8}).encode()
request = urllib.request.Request(f"http://127.0.0.1:{sys.argv[1]}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
try:
    print("answered", urllib.request.urlopen(request, timeout=30).status)
except urllib.error.HTTPError as e:
    print("refused", e.code, e.read().decode()[:300])
PY
wait $pid
echo "exit $?"
)sh";
  const auto r = run_command("bash " + dir + "/run.sh " + drift() + " " + shell_quote(stories()) + " " + dir);
  std::string err;
  {
    std::ifstream in(dir + "/err");
    err.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_NE(r.out.find("killed rank"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("refused 500"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("exit 1"), std::string::npos) << r.out << err;
  EXPECT_NE(err.find("the engine stopped: tensor parallel rank 1"), std::string::npos) << err;
}

TEST(TensorParallelCli, RankArgumentsAreChecked) {
  auto r = run_command(drift() + " rank --rendezvous 127.0.0.1:1 --rank 0 --size 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--rank 0 of --size 2: ranks 1 to size - 1 run with `drift rank`"), std::string::npos) << r.err;
  r = run_command(drift() + " rank --rank 1 --size 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("rendezvous"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace drift
