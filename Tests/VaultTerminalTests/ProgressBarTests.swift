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

    /// A download of no known size: the bytes in, the rate and the time taken; never a bar or a time left.
    @Test func theCountHasTheBytesTheRateAndTheTimeTaken() {
        #expect(ByteProgress.line(label: "fetching", bytes: 320 << 10, elapsed: 2.5) == "fetching 320 KiB, 128 KiB/s, 0:02")
        #expect(ByteProgress.line(label: "fetching", bytes: 1023, elapsed: 0.5) == "fetching 0 KiB, 1 KiB/s, 0:00")
        // From 1 MiB on, in MiB with one decimal (rounded down); minutes and seconds.
        #expect(ByteProgress.line(label: "fetching", bytes: (1 << 20) * 13 / 10, elapsed: 65) == "fetching 1.2 MiB, 20 KiB/s, 1:05")
        #expect(ByteProgress.line(label: "fetching", bytes: 3 << 20, elapsed: 1) == "fetching 3.0 MiB, 3.0 MiB/s, 0:01")
    }

    /// Nothing before half a second (a fast download draws nothing), then at most every tenth of a second.
    @Test func theCountIsDrawnOnlyOnceTheDownloadHasLastedHalfASecond() {
        let count = ByteProgress(label: "fetching", started: 100)
        #expect(count.text(bytes: 64 << 10, now: 100.2) == nil)
        #expect(count.text(bytes: 128 << 10, now: 100.49) == nil)
        #expect(count.text(bytes: 160 << 10, now: 100.5) == "fetching 160 KiB, 320 KiB/s, 0:00")
        #expect(count.text(bytes: 170 << 10, now: 100.55) == nil)
        #expect(count.text(bytes: 200 << 10, now: 101) == "fetching 200 KiB, 200 KiB/s, 0:01")
        #expect(!count.line.shown)
        count.finish()
    }
}
