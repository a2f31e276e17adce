import Glibc
import Testing
@testable import VaultTerminal

@Suite struct ProgressBarTests {
    @Test func theLineHasTheBarTheCountAndTheTimeLeft() {
        #expect(ProgressBar.line(label: "exporting", done: 0, total: 500, unit: "entries", elapsed: 0)
                == "exporting [--------------------] 0/500 entries")
        // Under a second: no estimate yet.
        #expect(ProgressBar.line(label: "exporting", done: 120, total: 500, unit: "entries", elapsed: 0.5)
                == "exporting [####----------------] 120/500 entries")
        // 120 in 10 s: 380 more take 31.7 s, shown rounded up.
        #expect(ProgressBar.line(label: "exporting", done: 120, total: 500, unit: "entries", elapsed: 10)
                == "exporting [####----------------] 120/500 entries, 0:32 left")
        #expect(ProgressBar.line(label: "decrypting", done: 1, total: 100, unit: "files", elapsed: 2)
                == "decrypting [--------------------] 1/100 files, 3:18 left")
        #expect(ProgressBar.line(label: "exporting", done: 500, total: 500, unit: "entries", elapsed: 60)
                == "exporting [####################] 500/500 entries")
    }

    @Test func nothingWithoutATerminal() {
        // The test runner's stderr is a pipe or a file here, never a terminal (the CLI's pty test shows the other side).
        #expect(ProgressBar.onTerminal("exporting", total: 3) == nil || isatty(2) == 1)
        #expect(ProgressBar.onTerminal("exporting", total: 0) == nil)
    }

    /// `advance(to:)` takes a running total (a seal reports how many entries it wrote): a smaller one, as a write
    /// tried again reports from the start, changes nothing; past the total stops at it.
    @Test func advancingToARunningTotalNeverGoesBack() {
        let bar = ProgressBar(label: "re-encrypting", total: 600, unit: "entries")
        bar.advance(to: 256)
        #expect(bar.done == 256)
        bar.advance(to: 10)
        #expect(bar.done == 256)
        bar.advance(to: 900)
        #expect(bar.done == 600)
        bar.finish()
    }
}
