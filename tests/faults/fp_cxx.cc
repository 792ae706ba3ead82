// A C++ program for the real-program matrix: std::string, std::map, std::vector, std::thread and
// std::mutex, deterministic output. Four threads count words of generated text into maps of their
// own, then merge them under a mutex.
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

static std::map<std::string, long> total;
static std::mutex total_lock;

static std::string word(unsigned long x)
{
    static const char *const syll[] = { "ka", "lo", "mi", "nu", "pe", "ra", "si", "to" };
    std::string w;
    for (int i = 0; i < 1 + static_cast<int>(x % 4); i++) {
        w += syll[x % 8];
        x /= 8;
    }
    return w;
}

static void count(unsigned seed, int lines)
{
    std::map<std::string, long> mine;
    unsigned long x = seed * 2654435761ul + 1;
    for (int l = 0; l < lines; l++) {
        std::string line;
        for (int w = 0; w < 12; w++) {
            x = x * 6364136223846793005ul + 1442695040888963407ul;
            line += word(x >> 33) + " ";
        }
        std::vector<std::string> words;
        std::string cur;
        for (char c : line) {
            if (c == ' ') {
                words.push_back(cur);
                cur.clear();
            } else {
                cur.push_back(c);
            }
        }
        for (const auto &w : words)
            mine[w]++;
    }
    std::lock_guard<std::mutex> g(total_lock);
    for (const auto &kv : mine)
        total[kv.first] += kv.second;
}

int main()
{
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < 4; t++)
        threads.emplace_back(count, t, 3000);
    for (auto &t : threads)
        t.join();
    long words = 0;
    for (const auto &kv : total)
        words += kv.second;
    std::printf("distinct %zu words %ld first %s last %s\n", total.size(), words, total.begin()->first.c_str(),
                total.rbegin()->first.c_str());
    return 0;
}
