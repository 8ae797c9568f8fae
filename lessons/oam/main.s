; oam: sprites through the DMA page.
;
; Two balls bounce: one across, one up and down. Each frame the main loop
; moves them, compares their positions (position-compare) and writes them
; into the shadow OAM page at $0200 (sprite-writer). In vblank, NMI starts
; the DMA through $4014 that copies the page into the PPU, then points
; PPUADDR at $3F00 and streams all 32 palette bytes (palette-writer): the
; calm palette (black backdrop, red and blue balls), or while the balls
; overlap the flash one (white backdrop).

PPUCTRL   = $2000
PPUMASK   = $2001
PPUSTATUS = $2002
OAMADDR   = $2003
PPUSCROLL = $2005
PPUADDR   = $2006
PPUDATA   = $2007
OAMDMA    = $4014
BALLS     = 2

.segment "HEADER"
    .byte "NES", $1A, 1, 1  ; 16K PRG, 8K CHR
    .byte $00, $00          ; mapper 0 (NROM)
    .res 8, 0

.zeropage
frame:   .res 1
palette: .res 1             ; offset into `palettes`: 0 calm, 32 flash
ball_x:  .res BALLS         ; ball_x and ball_y make one array of
ball_y:  .res BALLS         ; coordinates for the move loop
speed:   .res 2 * BALLS     ; signed pixels per frame, in the same order

.segment "OAM"
oam: .res 256               ; 64 sprites: y, tile, attributes, x

.code
reset:
    sei
    cld
    ldx #$FF
    txs
    inx
    stx PPUCTRL
    stx PPUMASK
    stx $4010
    bit PPUSTATUS
@vblank1:
    bit PPUSTATUS
    bpl @vblank1
@clear:
    lda #0
    sta $00,x
    lda #$FF                ; Y = $FF: below the screen, out of sight
    sta oam,x
    inx
    bne @clear
@vblank2:
    bit PPUSTATUS
    bpl @vblank2

    ldx #4 * BALLS - 1      ; coordinates and speeds
@start:
    lda start,x
    sta ball_x,x
    dex
    bpl @start
    lda #%10000000          ; NMI on: the first one writes the palette
    sta PPUCTRL
    lda #%00010100          ; sprites only, left column too
    sta PPUMASK

main_loop:
    lda frame
@frame:
    cmp frame
    beq @frame
    ldx #2 * BALLS - 1      ; every coordinate: x0, x1, y0, y1
@move:
    lda ball_x,x            ; add the speed; turn round at either edge
    clc
    adc speed,x
    sta ball_x,x
    cmp low,x
    bcc @turn
    cmp high,x
    bcc @moved
@turn:
    lda #0
    sec
    sbc speed,x
    sta speed,x
@moved:
    dex
    bpl @move

    ldx #BALLS - 1          ; sprite-writer: ball N is sprite N
@sprite:
    txa
    asl a
    asl a
    tay
    lda ball_y,x
    sta oam,y
    lda #1                  ; the ball tile
    sta oam+1,y
    txa                     ; its palette: the ball's number
    sta oam+2,y
    lda ball_x,x
    sta oam+3,y
    dex
    bpl @sprite

    ldx #0                  ; position-compare: they overlap when both
@axis:                      ; |x0 - x1| and |y0 - y1| are under 8
    lda ball_x,x
    sec
    sbc ball_x+1,x
    bcs @positive
    eor #$FF                ; negative: negate it (carry is clear)
    adc #1
@positive:
    cmp #8
    bcs @apart
    inx                     ; from x to y: two bytes on
    inx
    cpx #2 * BALLS
    bne @axis
    lda #32                 ; touching: the flash palette
    bne @set                ; always
@apart:
    lda #0
@set:
    sta palette
    jmp main_loop

nmi:
    pha
    txa
    pha
    tya
    pha
    lda #0                  ; sprite-writer: 256 bytes from $0200
    sta OAMADDR
    lda #>oam
    sta OAMDMA              ; the CPU waits 513 cycles while it copies
    lda #$3F                ; palette-writer: $3F00, then 32 bytes
    sta PPUADDR
    lda #$00
    sta PPUADDR
    ldx palette
    ldy #32
@palette:
    lda palettes,x
    sta PPUDATA
    inx
    dey
    bne @palette
    lda #%10000000          ; PPUADDR moved the scroll: set it back
    sta PPUCTRL
    lda #0
    sta PPUSCROLL
    sta PPUSCROLL
    inc frame
    pla
    tay
    pla
    tax
    pla
irq:
    rti

.rodata
start:                      ; x0, x1, y0, y1 and their speeds
    .byte 24, 124, 112, 20, 2, 0, 0, 1
low:                        ; each coordinate's edges
    .byte 8, 8, 16, 16
high:
    .byte 240, 240, 208, 208
palettes:                   ; $3F10 is the backdrop again: keep them equal
    .byte $0F,$00,$10,$30, $0F,$00,$10,$30, $0F,$00,$10,$30, $0F,$00,$10,$30
    .byte $0F,$16,$27,$30, $0F,$12,$21,$30, $0F,$16,$27,$30, $0F,$12,$21,$30
    .byte $30,$00,$10,$30, $30,$00,$10,$30, $30,$00,$10,$30, $30,$00,$10,$30
    .byte $30,$16,$27,$0F, $30,$12,$21,$0F, $30,$16,$27,$0F, $30,$12,$21,$0F

.segment "CHARS"
    .res 16, $00                                    ; tile 0: empty
    .byte $3C, $7E, $FF, $FF, $FF, $FF, $7E, $3C    ; tile 1: a ball, colour 1,
    .byte $00, $18, $3C, $3C, $3C, $18, $00, $00    ; with a colour 3 middle

.segment "VECTORS"
    .word nmi, reset, irq
