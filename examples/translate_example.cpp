// Translate a few sentences with the nazar C++ API (nazar/decode/translator.h), from several
// threads at once: one Translator, a pool of two model replicas.
//
//   translate_example MODEL "sentence one" "sentence two" ...
// Prints, per sentence, the 2-best translations with their scores and hard alignments.
#include <nazar/decode/translator.h>

#include <cstdio>
#include <exception>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL SENTENCE...\n", argv[0]);
        return 2;
    }
    try {
        const nazar::Translator translator(argv[1], {.replicas = 2});
        const std::vector<std::string> sentences(argv + 2, argv + argc);
        const nazar::TranslationOptions options{.beam_size = 4, .n_best = 2, .alignments = true};

        // Two callers at once: each borrows its own replica, so the results are the same.
        std::vector<nazar::Translation> first, second;
        std::thread other([&] { second = translator.translate(sentences, options); });
        first = translator.translate(sentences, options);
        other.join();

        for (std::size_t i = 0; i < sentences.size(); ++i) {
            std::printf("%s\n", sentences[i].c_str());
            for (std::size_t k = 0; k < first[i].hypotheses.size(); ++k) {
                const auto& h = first[i].hypotheses[k];
                std::printf("  %zu. %s  (score %.4f)  [%s]\n", k + 1, h.text.c_str(), h.score,
                            nazar::format_hard_alignment(h.alignment).c_str());
                if (h.text != second[i].hypotheses[k].text) {
                    std::fprintf(stderr, "concurrent calls disagree on sentence %zu\n", i);
                    return 1;
                }
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
