// Property tests over randomly generated well-typed programs of every operator:
//   - print -> parse gives a structurally equal AST, and printing is a fixed point;
//   - the type checker accepts them with the type they were built for;
//   - the streaming interpreter produces exactly what a direct reference evaluation does.
#include "frontend/Parser.h"
#include "lang/Diagnostics.h"
#include "lang/Printer.h"
#include "lang/TypeChecker.h"
#include "runtime/execution/Interpreter.h"
#include "RandomPrograms.h"
#include "ReferenceEval.h"

#include <gtest/gtest.h>

#include <random>

using namespace brevis;

TEST(Property, RandomProgramsRoundTripThroughTextAndRunLikeTheReference) {
  const unsigned widths[] = {1, 3, 7, 8, 12, 16, 23, 32, 33, 63, 64};
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    ProgramGenerator gen(seed);
    StreamType t{widths[seed % std::size(widths)], seed % 5 == 0 ? seed % 3 : 1 + (seed * 7919) % 9000};
    ExprPtr program = gen.make(t, 1 + seed % 5);
    std::string text = printExpr(*program) + "\n";

    Diagnostics diags("random.bdsl", text);
    auto parsed = parseModule(diags);
    ASSERT_TRUE(parsed) << "seed " << seed << "\n" << diags.render() << text;
    ASSERT_FALSE(parsed->isCheckpoint());
    EXPECT_TRUE(structurallyEqual(parsed->expr(), *program)) << "seed " << seed << "\n" << text;
    EXPECT_EQ(printModule(*parsed), text) << "seed " << seed;

    TypeChecker checker(diags);
    Payload payload = Payload::fromBytes(gen.payload());
    auto type = checker.check(parsed->expr(), payload.size());
    ASSERT_TRUE(type) << "seed " << seed << "\n" << diags.render() << text;
    EXPECT_EQ(*type, t);

    auto words = evaluateWords(parsed->expr(), payload);
    ASSERT_TRUE(words) << "seed " << seed << ": " << words.error().message;
    EXPECT_EQ(*words, referenceEvaluate(parsed->expr(), payload, checker)) << "seed " << seed << "\n" << text;
    EXPECT_EQ(streamTypeOf(parsed->expr()), t);

    // Any range decodes alone to the same words (pieces of a region decode in parallel).
    auto full = evaluate(parsed->expr(), payload);
    ASSERT_TRUE(full);
    const unsigned cb = containerBytes(t.width);
    Region region;
    region.program = std::move(std::get<ExprPtr>(parsed->body));
    region.bytes = ByteRange{0, t.length * cb};
    Interpreter interpreter;
    std::mt19937_64 rng(seed);
    for (int k = 0; k < 4 && t.length > 0; ++k) {
      uint64_t first = rng() % t.length, count = rng() % (t.length - first + 1);
      Bytes part;
      VectorSink sink(part);
      auto done = interpreter.decodeWords(region, payload, first, count, sink);
      ASSERT_TRUE(done) << "seed " << seed << ": " << done.error().message;
      EXPECT_EQ(part, Bytes(full->begin() + static_cast<long>(first * cb), full->begin() + static_cast<long>((first + count) * cb)))
          << "seed " << seed << ", words " << first << "+" << count << "\n" << text;
    }
  }
}
